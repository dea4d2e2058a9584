import { PassThrough } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { jobsCommand } from '../../src/cli/jobs-command.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, runUntilDone, uploadCsv } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

/** Issue 33: a deleted job stays listed (its record stays) and is marked, in the API and the CLI. */
afterEach(closeHarnesses);

describe.each(TEST_STORES)('deleted jobs in lists, on %s', (kind) => {
  it('GET /api/jobs and `sluice jobs list` give deleted_at for a deleted job and null for the others', async () => {
    const h = await openStoreHarness(kind);
    const caller = await newAccount(h);
    const gone = json(await uploadCsv(h, caller.key, 'email\nanna.schmidt@example.com\n')).id;
    const kept = json(await uploadCsv(h, caller.key, 'email\njohn.smith@example.org\n')).id;
    await runUntilDone(h, [gone, kept]);
    expect((await h.app.inject({ method: 'DELETE', url: `/api/jobs/${gone}`, headers: bearer(caller.key) })).statusCode).toBe(200);

    const listed = json(await h.app.inject({ method: 'GET', url: '/api/jobs', headers: bearer(caller.key) })).jobs as { id: string; deleted_at: string | null }[];
    expect(listed.find((j) => j.id === gone)?.deleted_at).toMatch(/^\d{4}-\d\d-\d\dT/);
    expect(listed.find((j) => j.id === kept)?.deleted_at).toBeNull();

    let out = '';
    const stdout = new PassThrough().on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const io = { stdout: stdout as unknown as NodeJS.WriteStream, stderr: new PassThrough() as unknown as NodeJS.WriteStream };
    expect(await jobsCommand(h.engine, ['list', '--account', caller.id], io)).toBe(0);
    const lines = out.split('\n');
    expect(lines.find((l) => l.startsWith(gone))).toMatch(/deleted \d{4}-\d\d-\d\dT\S+: files gone$/);
    expect(lines.find((l) => l.startsWith(kept))).not.toContain('deleted');
  });
});
