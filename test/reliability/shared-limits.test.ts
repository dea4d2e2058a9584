import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { startProviderSimulator, type ProviderSimulator } from '../../src/lookups/remote/provider-simulator.js';
import { cliEnv, scratchDir, spawnCli, workerReady, type CliChild } from '../support/cli-process.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { TEST_STORES, type TestEngine } from '../support/test-engine.js';
import { jobEnd, logRecords, reliabilityScope, type StorePeek } from './reliability-support.js';

/**
 * Issue #15 item 1: the limits that each process used to keep in its own memory hold across real
 * `sluice` processes on one store, on each store. Every test runs enough processes that a limit kept
 * per process would be broken by their sum, and checks that the limit was reached, not only that it
 * was not passed.
 */

const GRANT = 1_000_000;

describe.each(TEST_STORES)("an account's remote lookups in flight, from three worker processes, on %s", (store) => {
  const scope = reliabilityScope(store);
  const LIMIT = 4;
  const WORKERS = 3;
  // Two chunks per process, each batch of 100 rows cut into requests of 5 keys: one process alone
  // wants up to 40 requests out at once, so each one presses on the account's limit.
  const ENV = {
    SLUICE_CHUNK_ROWS: '200',
    SLUICE_BATCH_ROWS: '100',
    SLUICE_POLL_MS: '20',
    SLUICE_WORKER_CONCURRENCY: '2',
    SLUICE_PROVIDER_MAX_BATCH: '5',
    SLUICE_ACCOUNT_CONCURRENCY: String(LIMIT),
  };

  it('stay within SLUICE_ACCOUNT_CONCURRENCY all together, though each process fills the limit on its own, and the jobs complete', async () => {
    const dir = scratchDir('sluice-shared-slots-');
    // One simulator per process, so that each process's own requests can be told apart; the
    // account's slots are one set whatever service a process asks.
    const simulators = await Promise.all(Array.from({ length: WORKERS }, () => startProviderSimulator({ latencyMs: 30 })));
    for (const simulator of simulators) scope.closers.push(() => simulator.close());
    const together = inFlightTogether(simulators);
    const env = { ...ENV, ...(await scope.engines.env()) };
    const dataDir = path.join(dir, 'data');
    const host = await scope.engines.open({ ...env, SLUICE_DATA_DIR: dataDir });
    await host.deps.billing.createAccount({ id: 'acc', credits: GRANT, now: Date.now() });
    const jobIds = await submitGenderJobs(host, dir, { jobs: 3, rows: 600, seed: 150 });
    const db = scope.peek(dataDir, env);

    const workers = simulators.map((simulator) =>
      spawnCli(['worker'], cliEnv(dataDir, { ...env, SLUICE_GENDER_PROVIDER_URL: simulator.url, SLUICE_LOG_LEVEL: 'warn' })),
    );
    await Promise.all(workers.map((w) => workerReady(w)));
    for (const jobId of jobIds) expect(await jobEnd(db, jobId, workers, 90_000), stderrOf(workers)).toBe('completed');

    const perProcess = simulators.map((s) => ({ requests: s.stats.requests, maxInFlight: s.stats.maxInFlight }));
    const figures = JSON.stringify({ together, perProcess });
    expect(together.maxInFlight, `more requests out at once than the account's limit: ${figures}`).toBeLessThanOrEqual(LIMIT);
    expect(together.maxInFlight, `the limit was never reached: ${figures}`).toBeGreaterThanOrEqual(LIMIT - 1);
    for (const p of perProcess) expect(p.requests, `a worker sent no request: ${figures}`).toBeGreaterThan(0);
    // Not asserted: that two processes had requests out at the same moment. A process keeps the
    // slots it took for a second, handing them from call to call, and lets them go together, so the
    // slots tend to move between processes as a set; with process-local limits the three overlap
    // and reach 12 (see ARCHITECTURE.md, where each limit lives).
    // What per-process limits would have allowed: each process's own peak, all at once.
    const perProcessSum = perProcess.reduce((sum, p) => sum + p.maxInFlight, 0);
    expect(perProcessSum, `the processes did not press on the limit each: ${figures}`).toBeGreaterThan(LIMIT);
  }, 120_000);
});

describe.each(TEST_STORES)("an account's running jobs, with three worker processes, on %s", (store) => {
  const scope = reliabilityScope(store);
  const MAX_RUNNING = 2;
  const JOBS = 6;
  // Three processes of two chunks each could run all six jobs at once.
  const ENV = {
    SLUICE_CHUNK_ROWS: '250',
    SLUICE_BATCH_ROWS: '50',
    SLUICE_POLL_MS: '20',
    SLUICE_WORKER_CONCURRENCY: '2',
    SLUICE_ACCOUNT_RUNNING_JOBS: String(MAX_RUNNING),
  };

  it('never number more than SLUICE_ACCOUNT_RUNNING_JOBS at once, and all complete', async () => {
    const dir = scratchDir('sluice-shared-running-');
    const env = { ...ENV, ...(await scope.engines.env()) };
    const dataDir = path.join(dir, 'data');
    const host = await scope.engines.open({ ...env, SLUICE_DATA_DIR: dataDir });
    await host.deps.billing.createAccount({ id: 'acc', credits: GRANT, now: Date.now() });
    const jobIds = await submitGenderJobs(host, dir, { jobs: JOBS, rows: 1_500, seed: 250 });
    const db = scope.peek(dataDir, env);

    const workers = Array.from({ length: 3 }, () => spawnCli(['worker'], cliEnv(dataDir, { ...env, SLUICE_LOG_LEVEL: 'warn' })));
    await Promise.all(workers.map((w) => workerReady(w)));
    let mostRunning = 0;
    const processes = new Set<string>();
    const ended = await samplesUntil(async () => {
      const running = (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM jobs WHERE account_id = 'acc' AND status = 'running'"))!.n;
      mostRunning = Math.max(mostRunning, running);
      for (const owner of await chunkOwners(db)) processes.add(pidOf(owner));
      const left = (await db.get<{ n: number }>("SELECT COUNT(*) AS n FROM jobs WHERE status IN ('queued', 'running')"))!.n;
      return left === 0 || workers.some((w) => w.child.exitCode !== null);
    }, 90_000);
    expect(ended, stderrOf(workers)).toBe(true);

    for (const jobId of jobIds) expect((await db.job(jobId)).status, stderrOf(workers)).toBe('completed');
    expect(mostRunning, 'more jobs of the account ran at once than its limit').toBeLessThanOrEqual(MAX_RUNNING);
    expect(mostRunning, 'the limit was never reached').toBe(MAX_RUNNING);
    expect(processes.size, 'the jobs ran in fewer than two processes').toBeGreaterThanOrEqual(2);
  }, 120_000);
});

describe.each(TEST_STORES)("an account's API rate limit, across two `serve --no-worker` processes, on %s", (store) => {
  const scope = reliabilityScope(store);
  const LIMIT = 30;
  const HOSTS = ['127.0.0.2', '127.0.0.3'];

  it('lets exactly SLUICE_RATE_LIMIT_PER_MINUTE requests through between both, refuses the rest with 429 rate_limited, and X-RateLimit-Remaining counts down across both', async () => {
    const dir = scratchDir('sluice-shared-rate-');
    const env = { SLUICE_POLL_MS: '20', SLUICE_RATE_LIMIT_PER_MINUTE: String(LIMIT), ...(await scope.engines.env()) };
    // A SQLite store is a data dir, which both processes must share; on PostgreSQL each is a
    // machine of its own, sharing only the database.
    const dataDirs = HOSTS.map((_, i) => path.join(dir, store === 'sqlite' ? 'data' : `machine-${i}`));
    const engine = await scope.engines.open({ ...env, SLUICE_DATA_DIR: dataDirs[0]! });
    await engine.deps.billing.createAccount({ id: 'acc', credits: 100, now: Date.now() });
    const { secret } = await engine.auth.keys.create({ accountId: 'acc', name: 'shared-rate', role: 'admin', now: Date.now() });
    const servers = await Promise.all(HOSTS.map((host, i) => serveOn(host, dataDirs[i]!, env)));

    const answers: { server: number; status: number; remaining: string | null; code: unknown }[] = [];
    for (let i = 0; i < LIMIT + 10; i++) {
      const server = i % servers.length;
      const response = await fetch(`${servers[server]!.baseUrl}/api/jobs`, { headers: { authorization: `Bearer ${secret}` } });
      const body = (await response.json()) as { code?: unknown };
      answers.push({ server, status: response.status, remaining: response.headers.get('x-ratelimit-remaining'), code: body.code });
    }

    const seen = JSON.stringify(answers);
    expect(answers.map((a) => a.status), seen).toEqual([...Array<number>(LIMIT).fill(200), ...Array<number>(10).fill(429)]);
    expect(answers.map((a) => Number(a.remaining)), seen).toEqual([...Array.from({ length: LIMIT }, (_, i) => LIMIT - 1 - i), ...Array<number>(10).fill(0)]);
    expect(answers.filter((a) => a.status === 429).every((a) => a.code === 'rate_limited'), seen).toBe(true);
    for (const server of servers.keys()) {
      expect(answers.filter((a) => a.server === server && a.status === 200).length, `server ${HOSTS[server]}`).toBe(LIMIT / 2);
    }
  });
});

describe.each(TEST_STORES)("a remote provider's circuit breaker, in two worker processes, while the provider is down, on %s", (store) => {
  const scope = reliabilityScope(store);
  // The breaker's defaults (src/lookups/remote/circuit-breaker.ts), which the engine keeps.
  const THRESHOLD = 5;
  const OPEN_MS = 5_000;
  const PROCESSES = 2;
  // One chunk per process and batches smaller than a request: each process has at most one request
  // out at a time. A long provider retry keeps the paused job from being taken up again meanwhile.
  const ENV = {
    SLUICE_CHUNK_ROWS: '200',
    SLUICE_BATCH_ROWS: '50',
    SLUICE_POLL_MS: '20',
    SLUICE_WORKER_CONCURRENCY: '1',
    SLUICE_PROVIDER_RETRY_SECONDS: '600',
    SLUICE_PROVIDER_TIMEOUT_MS: '2000',
  };

  it('is one breaker for both: until the job pauses with provider_unavailable, the service gets fewer requests than the failures it takes to open two breakers of their own', async () => {
    const dir = scratchDir('sluice-shared-breaker-');
    const service = await startProviderSimulator({ latencyMs: 5, down: true });
    scope.closers.push(() => service.close());
    const env = { ...ENV, SLUICE_GENDER_PROVIDER_URL: service.url, ...(await scope.engines.env()) };
    const dataDir = path.join(dir, 'data');
    const host = await scope.engines.open({ ...env, SLUICE_DATA_DIR: dataDir });
    await host.deps.billing.createAccount({ id: 'acc', credits: GRANT, now: Date.now() });
    const [jobId] = await submitGenderJobs(host, dir, { jobs: 1, rows: 2 * Number(ENV.SLUICE_CHUNK_ROWS), seed: 350 });
    const db = scope.peek(dataDir, env);

    const workers = Array.from({ length: PROCESSES }, () => spawnCli(['worker'], cliEnv(dataDir, { ...env, SLUICE_LOG_LEVEL: 'warn' })));
    await Promise.all(workers.map((w) => workerReady(w)));
    // Before the first request: the time the breaker's trials are counted from can only be earlier.
    let beforeFirstRequest = Date.now();
    let mostProcessesAtOnce = 0;
    const settled = await samplesUntil(async () => {
      if (service.stats.requests === 0) beforeFirstRequest = Date.now();
      mostProcessesAtOnce = Math.max(mostProcessesAtOnce, new Set((await chunkOwners(db)).map(pidOf)).size);
      const job = (await db.get<{ status: string }>('SELECT status FROM jobs WHERE id = ?', [jobId]))!;
      // Paused, and no process still in a batch of the job: every request it could cause was sent.
      const leased = (await db.get<{ n: number }>('SELECT COUNT(*) AS n FROM job_chunks WHERE job_id = ? AND lease_owner IS NOT NULL AND lease_expires_at >= ?', [jobId, Date.now()]))!.n;
      return (job.status === 'paused' && leased === 0) || job.status === 'completed' || workers.some((w) => w.child.exitCode !== null);
    }, 40_000);
    const elapsed = Date.now() - beforeFirstRequest;
    expect(settled, stderrOf(workers)).toBe(true);
    const job = (await db.get<{ status: string; reason: string | null; error_rows: number }>('SELECT status, reason, error_rows FROM jobs WHERE id = ?', [jobId]))!;
    expect(job).toEqual({ status: 'paused', reason: 'provider_unavailable', error_rows: 0 });
    // Both in a batch of the job at once: breakers of their own would each have met the outage.
    expect(mostProcessesAtOnce, `the processes never worked on the job at the same time: ${stderrOf(workers)}`).toBe(PROCESSES);
    expect(workers.some((w) => logRecords(w.stderr()).some((r) => r.msg === 'lookup provider unavailable; job paused')), stderrOf(workers)).toBe(true);

    // The bound: THRESHOLD failures open it; the other process may have one request out when it
    // opens, and may start one more on a view of the breaker read less than 100 ms earlier; then
    // one half-open trial per OPEN_MS for all processes together. A batch's later tries are refused
    // by the open breaker without a request.
    const trials = Math.floor(elapsed / OPEN_MS);
    const bound = THRESHOLD + 2 * (PROCESSES - 1) + trials;
    const figures = JSON.stringify({ requests: service.stats.requests, byStatus: service.stats.byStatus, elapsed, bound });
    expect(service.stats.requests, `more requests than one shared breaker lets through: ${figures}`).toBeLessThanOrEqual(bound);
    // A breaker per process opens only on that process's own THRESHOLD failures: at least this many.
    expect(service.stats.requests, `as many requests as separate breakers would send: ${figures}`).toBeLessThan(PROCESSES * THRESHOLD);
    expect(service.stats.requests, figures).toBeGreaterThanOrEqual(THRESHOLD);
  }, 60_000);
});

describe.each(TEST_STORES)('fair share between accounts, with two worker processes of one slot each, on %s', (store) => {
  const scope = reliabilityScope(store);
  const BIG_ROWS = 40_000;
  // Two chunks of the large job fill both processes' one slot; a remote service at 30 ms per request
  // of 10 keys paces them, so the large job lasts several fair slices.
  const ENV = {
    SLUICE_CHUNK_ROWS: String(BIG_ROWS / 2),
    SLUICE_BATCH_ROWS: '100',
    SLUICE_POLL_MS: '20',
    SLUICE_WORKER_CONCURRENCY: '1',
    SLUICE_PROVIDER_MAX_BATCH: '10',
  };

  it("run another account's small job while the large one still has most of its rows to go", async () => {
    const dir = scratchDir('sluice-fair-share-');
    const simulator = await startProviderSimulator({ latencyMs: 30 });
    scope.closers.push(() => simulator.close());
    const env = { ...ENV, ...(await scope.engines.env()), SLUICE_GENDER_PROVIDER_URL: simulator.url };
    const dataDir = path.join(dir, 'data');
    const host = await scope.engines.open({ ...env, SLUICE_DATA_DIR: dataDir });
    for (const id of ['big', 'small']) await host.deps.billing.createAccount({ id, credits: GRANT, now: Date.now() });
    const submit = async (accountId: string, rows: number, seed: number) => {
      const input = await writeGenderCsv(dir, `${accountId}.csv`, { rows, seed, pool: 1_000_000_000 });
      return (await host.jobService.submit({ accountId, type: 'gender', body: fs.createReadStream(input), inputName: `${accountId}.csv`, options: {} })).id;
    };
    const db = scope.peek(dataDir, env);
    const workers = [0, 1].map(() => spawnCli(['worker'], cliEnv(dataDir, { ...env, SLUICE_LOG_LEVEL: 'warn' })));
    await Promise.all(workers.map((w) => workerReady(w)));

    const bigJob = await submit('big', BIG_ROWS, 170);
    // Both processes in a chunk of the large job before the small one arrives: no slot is free.
    const busy = await samplesUntil(async () => new Set((await chunkOwners(db)).map(pidOf)).size === 2, 30_000);
    expect(busy, stderrOf(workers)).toBe(true);
    const smallJob = await submit('small', 300, 171);
    expect(await jobEnd(db, smallJob, workers, 60_000), stderrOf(workers)).toBe('completed');
    const big = (await db.get<{ status: string; processed_rows: number }>('SELECT status, processed_rows FROM jobs WHERE id = ?', [bigJob]))!;

    // Without the hand-over the small job would wait for a chunk of 20,000 rows to end: the large
    // job would be half done at least, and as both chunks run side by side, nearly done.
    expect(big.status, JSON.stringify(big)).toBe('running');
    expect(big.processed_rows, JSON.stringify(big)).toBeLessThan(BIG_ROWS * 0.75);
    expect(await jobEnd(db, bigJob, workers, 120_000), stderrOf(workers)).toBe('completed');
  }, 180_000);
});

/**
 * Requests in flight at all the simulators together, and how many of them had requests out at the
 * same moment. Every simulator counts its own in `stats.inFlight` as a request arrives and as its
 * answer closes, in this process's event loop; watching those writes sees every peak exactly,
 * which sampling would miss.
 */
function inFlightTogether(simulators: ProviderSimulator[]): { maxInFlight: number; mostProcessesAtOnce: number } {
  const own = simulators.map((s) => s.stats.inFlight);
  let now = own.reduce((a, b) => a + b, 0);
  const seen = { maxInFlight: now, mostProcessesAtOnce: 0 };
  simulators.forEach((simulator, i) => {
    Object.defineProperty(simulator.stats, 'inFlight', {
      enumerable: true,
      get: () => own[i]!,
      set: (value: number) => {
        now += value - own[i]!;
        own[i] = value;
        seen.maxInFlight = Math.max(seen.maxInFlight, now);
        seen.mostProcessesAtOnce = Math.max(seen.mostProcessesAtOnce, own.filter((n) => n > 0).length);
      },
    });
  });
  return seen;
}

/** Gender jobs of account `acc`, each input drawn from a pool of its own, so no job answers another's keys from the result cache. */
async function submitGenderJobs(host: TestEngine, dir: string, options: { jobs: number; rows: number; seed: number }): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < options.jobs; i++) {
    const input = await writeGenderCsv(dir, `in-${i}.csv`, { rows: options.rows, seed: options.seed + i, pool: 1_000_000_000, duplicateShare: 0.05, invalidShare: 0.02 });
    const job = await host.jobService.submit({ accountId: 'acc', type: 'gender', body: fs.createReadStream(input), inputName: `in-${i}.csv`, options: {} });
    ids.push(job.id);
  }
  return ids;
}

/** Runs `check` back to back until it says done, or the time is up; a store read paces it. */
async function samplesUntil(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await sleep(2);
  }
  return check();
}

async function chunkOwners(db: StorePeek): Promise<string[]> {
  return (await db.all<{ owner: string }>('SELECT DISTINCT lease_owner AS owner FROM job_chunks WHERE lease_owner IS NOT NULL')).map((r) => r.owner);
}

/** A lease owner is `host:pid:random`: its process. */
function pidOf(owner: string): string {
  return owner.split(':').slice(0, 2).join(':');
}

function stderrOf(processes: CliChild[]): string {
  return processes.map((p, i) => `process ${i} (exit ${p.child.exitCode ?? p.child.signalCode ?? 'none'}):\n${p.stderr()}`).join('\n');
}

const LISTENING = /listening on (http:\/\/[^\s]+)/;

/** `sluice serve --no-worker` on its own loopback address, as one machine behind a load balancer. */
async function serveOn(host: string, dataDir: string, env: Record<string, string>, timeoutMs = 20_000): Promise<CliChild & { baseUrl: string }> {
  const child = spawnCli(['serve', '--no-worker', '--host', host, '--port', '0'], cliEnv(dataDir, env));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = LISTENING.exec(child.stderr());
    if (match) return { ...child, baseUrl: match[1]!.replace(/\/$/, '') };
    if (child.child.exitCode !== null || child.child.signalCode !== null) throw new Error(`serve on ${host} exited before listening: ${child.stderr()}`);
    if (Date.now() > deadline) throw new Error(`serve on ${host} not listening after ${timeoutMs} ms: ${child.stderr()}`);
    await sleep(20);
  }
}
