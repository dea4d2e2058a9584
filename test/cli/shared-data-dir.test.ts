import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { parseCsv, resultRecords, writeGenderCsv } from '../support/csv-fixture.js';
import { cliEnv, DbPeek, exitWithin, killChildren, parseJson, queueJob, removeScratchDirs, runCli, scratchDir, spawnCli, workerReady, type CliResult } from '../support/cli-process.js';

const peeks: DbPeek[] = [];
afterEach(async () => {
  await killChildren();
  for (const peek of peeks.splice(0)) peek.close();
  removeScratchDirs();
});

const GRANT = 100_000;

describe('several sluice processes on one data dir at once', () => {
  it('two workers, two runs and job listings share the data dir: both jobs complete, the balance adds up, nothing crashes', async () => {
    const root = scratchDir('sluice-shared-');
    const dataDir = path.join(root, 'data');
    const env = cliEnv(dataDir, { SLUICE_CHUNK_ROWS: '500', SLUICE_BATCH_ROWS: '100', SLUICE_POLL_MS: '20' });
    const files = [
      await writeGenderCsv(root, 'a.csv', { rows: 3000, seed: 51, pool: 2500 }),
      await writeGenderCsv(root, 'b.csv', { rows: 2500, seed: 52, pool: 2500 }),
    ];
    const created = await runCli(['accounts', 'create', '--credits', String(GRANT), '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const accountId = parseJson(created).id as string;

    const workers = [spawnCli(['worker'], env), spawnCli(['worker'], env)];
    await Promise.all(workers.map((w) => workerReady(w)));

    let runsDone = false;
    const listings: CliResult[] = [];
    const listWhileRunning = async () => {
      // At least two listings, and more for as long as the runs take.
      while (!runsDone || listings.length < 2) listings.push(await runCli(['jobs', 'list', '--json'], env));
    };
    const runs = Promise.all(
      files.map((file, i) => runCli(['run', file, '--account', accountId, '--json', '--out', path.join(root, `out-${i}`)], env, 60_000)),
    ).finally(() => {
      runsDone = true;
    });
    const [results] = await Promise.all([runs, listWhileRunning()]);

    for (const result of [...results, ...listings]) {
      expect(result.code, result.stderr).toBe(0);
      expect(result.stderr).not.toMatch(/sluice:|Error|^\s+at /m);
    }
    const jobs = results.map((r) => parseJson(r));
    for (const [i, job] of jobs.entries()) {
      const rows = (await parseCsv(fs.readFileSync(files[i]!))).length - 1;
      expect(job).toMatchObject({ status: 'completed', account_id: accountId, rows: { total: rows, processed: rows, error: 0 } });
      expect((await parseCsv(fs.readFileSync(job.files.all))).length - 1).toBe(rows);
    }
    // Nobody crashed and no lease ran out, so a chunk taken twice means a failed attempt.
    const db = new DbPeek(dataDir);
    peeks.push(db);
    for (const job of jobs) {
      const takes = db.chunkLeaseTakes(job.id);
      expect(takes.length).toBeGreaterThan(1);
      expect(takes).toEqual(takes.map(() => 1));
    }

    // The files share addresses: across both jobs and all four processes, each is paid for once.
    const charged = (await Promise.all(jobs.map(async (job) => resultRecords(fs.readFileSync(job.files.all)))))
      .flat()
      .filter((r) => r.credits === '1')
      .map((r) => r.email!.trim().toLowerCase());
    expect(charged.length).toBe(jobs[0]!.credits_used + jobs[1]!.credits_used);
    expect(new Set(charged).size).toBe(charged.length);
    for (const listing of listings) {
      const listed = parseJson(listing);
      expect(listed.jobs.length).toBe(listed.total);
      for (const job of listed.jobs) expect(['queued', 'running', 'completed']).toContain(job.status);
    }

    const account = parseJson(await runCli(['accounts', 'show', accountId, '--json'], env));
    const spent = jobs[0]!.credits_used + jobs[1]!.credits_used;
    expect(spent).toBeGreaterThan(0);
    expect(account.credits).toBe(GRANT - spent);
    expect(account.available).toBe(account.credits);

    for (const worker of workers) {
      expect(worker.child.exitCode, worker.stderr()).toBeNull();
      expect(worker.stderr()).not.toMatch(/sluice:|Error|^\s+at /m);
    }

    // Whichever worker hosts the embedded S3 server dies with the other; a new command hosts it.
    for (const worker of workers) worker.child.kill('SIGKILL');
    await Promise.all(workers.map((w) => exitWithin(w.child, 5_000)));
    const out = path.join(root, 'again.csv');
    const download = await runCli(['jobs', 'download', jobs[0]!.id, '--filter', 'all', '--out', out], env);
    expect(download.code, download.stderr).toBe(0);
    expect(fs.readFileSync(out).equals(fs.readFileSync(jobs[0]!.files.all))).toBe(true);
  });

  it('when the embedded S3 host cuts the connection of a starting command, the command fails with storage_unavailable instead of exiting 0 having done nothing', async () => {
    // What a command sees when it probes the recorded port just as the hosting process closes:
    // the connection is accepted and then dropped before any answer.
    const dataDir = path.join(scratchDir('sluice-shared-'), 'data');
    fs.mkdirSync(path.join(dataDir, 's3'), { recursive: true });
    const dropper = net.createServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => dropper.listen({ host: '127.0.0.1', port: 0 }, resolve));
    fs.writeFileSync(path.join(dataDir, 's3', 'port'), `${(dropper.address() as net.AddressInfo).port}\n`);
    try {
      const result = await runCli(['accounts', 'create', '--credits', '5', '--json'], cliEnv(dataDir), 60_000);

      expect(result.code, `a command that did nothing exited ${result.code}; stdout: "${result.stdout}", stderr: "${result.stderr}"`).not.toBe(0);
      expect(result.stderr).toContain('(storage_unavailable)');
    } finally {
      await new Promise((resolve) => dropper.close(resolve));
    }
  }, 70_000);

  it('a command started while the embedded S3 host does not answer for a few seconds waits for it instead of failing', async () => {
    // The host's event loop stops whenever it waits on another process's SQLite lock, which
    // better-sqlite3 does synchronously for up to SLUICE_SQLITE_BUSY_TIMEOUT_MS (5 s); SIGSTOP
    // makes such a pause happen on purpose, for less than that.
    const dataDir = path.join(scratchDir('sluice-shared-'), 'data');
    const env = cliEnv(dataDir, { SLUICE_POLL_MS: '20' });
    const host = spawnCli(['worker'], env);
    await workerReady(host);
    expect(fs.existsSync(path.join(dataDir, 's3', 'port'))).toBe(true);

    host.child.kill('SIGSTOP');
    const command = runCli(['accounts', 'create', '--credits', '5', '--json'], env, 60_000);
    // The pause itself, not a wait for anything: the command has to cope with it.
    await sleep(4_500);
    host.child.kill('SIGCONT');
    const result = await command;

    expect(result.code, result.stderr).toBe(0);
    expect(parseJson(result)).toMatchObject({ credits: 5 });
    expect(host.child.exitCode).toBeNull();
  }, 70_000);

  it('a worker that hosts the embedded S3 server answers it within the 2 s other processes wait, all the while it works through a job', async () => {
    // A probe of the host gives up after 2 s (PROBE_TIMEOUT_MS). One slot on one long chunk of
    // many batches: a host that serves requests only between chunks stalls for the whole chunk.
    const root = scratchDir('sluice-shared-');
    const dataDir = path.join(root, 'data');
    const settings = { SLUICE_CHUNK_ROWS: '60000', SLUICE_BATCH_ROWS: '500', SLUICE_WORKER_CONCURRENCY: '1', SLUICE_POLL_MS: '20' };
    const input = await writeGenderCsv(root, 'in.csv', { rows: 60_000, seed: 53 });
    const { jobId } = await queueJob(dataDir, input, { credits: 100_000, env: settings });

    const host = spawnCli(['worker'], cliEnv(dataDir, settings));
    await workerReady(host);
    const endpoint = `http://127.0.0.1:${Number(fs.readFileSync(path.join(dataDir, 's3', 'port'), 'utf8'))}/`;
    const db = new DbPeek(dataDir);
    peeks.push(db);
    const answers: number[] = [];
    const deadline = Date.now() + 60_000;
    while (db.job(jobId).status !== 'completed' && Date.now() < deadline) {
      const started = performance.now();
      // Anonymous, so the answer is a 403; what counts is that it comes, and how soon.
      const response = await fetch(endpoint, { signal: AbortSignal.timeout(10_000) });
      await response.arrayBuffer();
      answers.push(performance.now() - started);
      await sleep(25);
    }

    expect(db.job(jobId).status, host.stderr()).toBe('completed');
    expect(answers.length).toBeGreaterThan(5);
    expect(Math.max(...answers), `slowest of ${answers.length} answers, in ms`).toBeLessThan(2_000);
  });
});
