import fs from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/cli-io.js';
import { accountsCommand } from '../../src/cli/accounts-command.js';
import { jobsCommand } from '../../src/cli/jobs-command.js';
import { runCommand } from '../../src/cli/run-command.js';
import { waitFor } from '../support/child-worker.js';
import { cliEnv, DbPeek, exitWithin, killChildren, parseJson, removeScratchDirs, runCli, scratchDir, spawnCli } from '../support/cli-process.js';
import { engineScope, runUntilSettled, TEST_STORES, writeFile } from '../support/test-engine.js';

/**
 * Issue #18 item 5 on the command line: `sluice jobs download ID --partial` gives a paused job's
 * committed rows, each byte-identical to its line in the file the job ends with, and says on stderr
 * that the file is partial; without `--partial` an unfinished job's download is still refused.
 */

/** A command's io with both streams kept as text: the rows go to stdout, the partial note to stderr. */
function textIo(): { io: CliIo; stdout: () => string; stderr: () => string } {
  const streams = [new PassThrough(), new PassThrough()];
  const texts = ['', ''];
  streams.forEach((s, i) => s.on('data', (chunk: Buffer) => (texts[i] += chunk.toString('utf8'))));
  return { io: { stdout: streams[0] as unknown as NodeJS.WriteStream, stderr: streams[1] as unknown as NodeJS.WriteStream }, stdout: () => texts[0]!, stderr: () => texts[1]! };
}

async function rejection(call: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await call;
  } catch (e: unknown) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a rejection');
}

// 60 distinct emails: three chunks of 20, batches of 5.
const ENV = { SLUICE_CHUNK_ROWS: '20', SLUICE_BATCH_ROWS: '5' };
const ROWS = 60;
const CSV = `email\n${Array.from({ length: ROWS }, (_, i) => `person${i}@example.com`).join('\n')}\n`;
/** Fewer credits than rows, so the job pauses mid-way with some batches committed. */
const CREDITS = 23;

/**
 * The partial file against the complete one: the same header, and each row one of the complete
 * file's rows, byte for byte, in the same order, none twice (chunks run side by side, so there may
 * be gaps). Returns the rows' positions in the complete file.
 */
function expectRowsOfComplete(partial: string, complete: string): number[] {
  const part = partial.split('\n');
  const whole = complete.split('\n');
  expect(part[0]).toBe(whole[0]);
  expect(part.at(-1)).toBe('');
  const positions = part.slice(1, -1).map((line) => whole.indexOf(line, 1));
  expect(positions.every((p) => p > 0 && p < whole.length - 1)).toBe(true);
  expect(positions).toEqual([...positions].sort((a, b) => a - b));
  expect(new Set(positions).size).toBe(positions.length);
  return positions;
}

describe.each(TEST_STORES)('sluice jobs download --partial on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  it('gives a paused job its committed rows, each as the finished job writes it, with a note on stderr', async () => {
    const e = await engines.open(ENV);
    const account = await e.deps.billing.createAccount({ credits: CREDITS, now: e.deps.clock.now() });
    const input = writeFile(e.dataDir, 'in.csv', CSV);

    const run = textIo();
    expect(await runCommand(e, [input, '--account', account.id, '--json', '--out', path.join(e.dataDir, 'out')], run.io)).toBe(3);
    const id = JSON.parse(run.stdout()).id as string;
    const paused = await e.deps.jobs.require(id);
    expect([paused.status, paused.reason]).toEqual(['paused', 'insufficient_credits']);
    const committed = paused.processedRows;
    expect(committed).toBeGreaterThan(0);
    expect(committed).toBeLessThan(ROWS);

    // Without asking, refused: a partial file is never handed out by mistake.
    expect(await rejection(jobsCommand(e, ['download', id, '--out', path.join(e.dataDir, 'x.csv')], textIo().io))).toMatchObject({ code: 'invalid_state' });
    expect(fs.existsSync(path.join(e.dataDir, 'x.csv'))).toBe(false);
    // A partial file is streamed, so there is no stored object to link to.
    expect(await rejection(jobsCommand(e, ['download', id, '--partial', '--url'], textIo().io))).toMatchObject({ code: 'bad_argument' });

    const toFile = path.join(e.dataDir, 'partial.csv');
    const written = textIo();
    expect(await jobsCommand(e, ['download', id, '--partial', '--out', toFile], written.io)).toBe(0);
    expect(written.stdout()).toBe('');
    expect(written.stderr()).toBe(`partial: ${committed} of ${ROWS} rows (job paused); not a complete result\n`);
    const partial = fs.readFileSync(toFile, 'utf8');
    expect(partial.split('\n')).toHaveLength(committed + 2);

    // To stdout the rows are the same and stdout holds nothing else.
    const piped = textIo();
    expect(await jobsCommand(e, ['download', id, '--partial'], piped.io)).toBe(0);
    expect(piped.stdout()).toBe(partial);
    expect(piped.stderr()).toBe(written.stderr());

    const described = textIo();
    expect(await jobsCommand(e, ['download', id, '--partial', '--out', path.join(e.dataDir, 'partial-2.csv'), '--json'], described.io)).toBe(0);
    expect(JSON.parse(described.stdout())).toEqual({ file: path.join(e.dataDir, 'partial-2.csv'), partial: true, rows_included: committed, rows_total: ROWS });

    // The top-up resumes the job by itself; a worker then finishes it.
    expect(await accountsCommand(e, ['topup', account.id, '100'], textIo().io)).toBe(0);
    expect((await e.deps.jobs.require(id)).status).toBe('running');
    await runUntilSettled(e, id);
    expect((await e.deps.jobs.require(id)).status).toBe('completed');
    const completeFile = path.join(e.dataDir, 'complete.csv');
    expect(await jobsCommand(e, ['download', id, '--out', completeFile], textIo().io)).toBe(0);
    const complete = fs.readFileSync(completeFile, 'utf8');
    expect(complete.split('\n')).toHaveLength(ROWS + 2);

    expect(expectRowsOfComplete(partial, complete)).toHaveLength(committed);
    // A completed job asked for --partial gives its complete file, with no note.
    const after = textIo();
    expect(await jobsCommand(e, ['download', id, '--partial'], after.io)).toBe(0);
    expect(after.stdout()).toBe(complete);
    expect(after.stderr()).toBe('');
  });
});

describe('the sluice jobs download --partial command', () => {
  const peeks: DbPeek[] = [];
  afterEach(async () => {
    await killChildren();
    for (const p of peeks.splice(0)) p.close();
    removeScratchDirs();
  });

  it('exits 1 with invalid_state without --partial, 0 with it; its rows are the finished file\'s', async () => {
    const root = scratchDir('sluice-partial-');
    const dataDir = path.join(root, 'data');
    const env = cliEnv(dataDir, { ...ENV, SLUICE_POLL_MS: '20' });
    const created = await runCli(['accounts', 'create', '--credits', String(CREDITS), '--json'], env);
    expect(created.code, created.stderr).toBe(0);
    const accountId = parseJson(created).id as string;

    const run = await runCli(['run', writeFile(root, 'in.csv', CSV), '--account', accountId, '--json', '--out', path.join(root, 'out')], env);
    expect(run.code, run.stderr).toBe(3);
    const job = parseJson(run);
    expect(job).toMatchObject({ status: 'paused', reason: 'insufficient_credits' });
    const committed = job.rows.processed as number;
    expect(committed).toBeGreaterThan(0);
    expect(committed).toBeLessThan(ROWS);

    const refused = await runCli(['jobs', 'download', job.id, '--out', path.join(root, 'x.csv')], env);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/^sluice: .*\(invalid_state\)\n$/);
    const partialFile = path.join(root, 'partial.csv');
    const partial = await runCli(['jobs', 'download', job.id, '--partial', '--out', partialFile], env);
    expect(partial.code, partial.stderr).toBe(0);
    expect(partial.stderr).toBe(`partial: ${committed} of ${ROWS} rows (job paused); not a complete result\n`);

    expect((await runCli(['accounts', 'topup', accountId, '100'], env)).code).toBe(0);
    const worker = spawnCli(['worker'], env);
    const db = new DbPeek(dataDir);
    peeks.push(db);
    expect(await waitFor(() => db.job(job.id).status === 'completed', 30_000, 25), worker.stderr()).toBe(true);
    const completeFile = path.join(root, 'complete.csv');
    const complete = await runCli(['jobs', 'download', job.id, '--out', completeFile], env);
    expect(complete.code, complete.stderr).toBe(0);
    worker.child.kill('SIGTERM');
    expect(await exitWithin(worker.child, 10_000)).toBe(0);

    const rows = expectRowsOfComplete(fs.readFileSync(partialFile, 'utf8'), fs.readFileSync(completeFile, 'utf8'));
    expect(rows).toHaveLength(committed);
  }, 90_000);
});
