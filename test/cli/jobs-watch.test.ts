import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { jobsCommand } from '../../src/cli/jobs-command.js';
import { watchJob } from '../../src/cli/watch-job.js';
import { closeHarnesses, json, newAccount, openApiHarness, runUntilDone, uploadCsv } from '../support/api-harness.js';

/** Issue 33: `sluice jobs watch ID` follows a job that another worker runs, to its end, with `sluice run`'s exit codes. */
afterEach(closeHarnesses);

function textIo() {
  const texts = { out: '', err: '' };
  const stdout = new PassThrough().on('data', (c: Buffer) => (texts.out += c.toString('utf8')));
  const stderr = new PassThrough().on('data', (c: Buffer) => (texts.err += c.toString('utf8')));
  return { io: { stdout: stdout as unknown as NodeJS.WriteStream, stderr: stderr as unknown as NodeJS.WriteStream }, texts };
}

describe('sluice jobs watch', () => {
  it('follows a job a worker runs elsewhere to its end: the summary, exit 0, and how to download', async () => {
    const h = await openApiHarness({ SLUICE_CHUNK_ROWS: '10', SLUICE_BATCH_ROWS: '5' });
    const caller = await newAccount(h);
    const rows = Array.from({ length: 40 }, (_, i) => `maria.rossi${i}@example.com`).join('\n');
    const id = json(await uploadCsv(h, caller.key, `email\n${rows}\n`)).id;
    const { io, texts } = textIo();
    const watching = jobsCommand(h.engine, ['watch', id], io);
    // The watcher runs nothing: the job only moves because this worker runs it.
    await runUntilDone(h, [id]);
    expect(await watching).toBe(0);
    expect(texts.out).toContain('completed');
    expect(texts.out).toContain(`download the results with \`sluice jobs download ${id} --out FILE\``);
  });

  it('ends with exit 3 on a pause, and never runs the job itself', async () => {
    const h = await openApiHarness();
    const caller = await newAccount(h);
    const id = json(await uploadCsv(h, caller.key, 'email\nanna.schmidt@example.com\n')).id;
    const watching = watchJob(h.engine, id, undefined, 10);
    await new Promise((r) => setTimeout(r, 200));
    expect(await h.engine.deps.jobs.status(id)).toBe('queued');
    await h.engine.deps.jobs.transition(id, 'paused', { reason: 'paused_by_operator', now: Date.now() });
    const result = await watching;
    expect(result.exitCode).toBe(3);
    expect(result.summary).toMatchObject({ id, status: 'paused', reason: 'paused_by_operator' });
  });
});
