import { PassThrough } from 'node:stream';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { partHead } from '../support/api-harness.js';
import { cliAccountWithKey, startServe } from '../support/api-serve.js';
import { exitWithin, killChildren } from '../support/cli-process.js';
import { tempDir } from '../support/test-engine.js';

afterEach(killChildren);

const ENV = { SLUICE_POLL_MS: '20', SLUICE_CHUNK_ROWS: '500', SLUICE_BATCH_ROWS: '100' };
const STOP_WITHIN_MS = 10_000;

describe('sluice serve as a process', () => {
  it('listens on the port it prints, answers /healthz and /readyz, serves the API with its worker, and exits 0 on SIGTERM', async () => {
    const dataDir = tempDir('sluice-serve-');
    const { key } = await cliAccountWithKey(dataDir, 100, ENV);
    const server = await startServe(dataDir, ENV);
    expect(server.baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(Number(new URL(server.baseUrl).port)).toBeGreaterThan(0);

    const health = await fetch(`${server.baseUrl}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toEqual({ status: 'ok' });
    const ready = await fetch(`${server.baseUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(await ready.json()).toEqual({ status: 'ready' });

    // A key the CLI made works against the running server; its worker runs the job.
    const auth = { authorization: `Bearer ${key}` };
    const form = new FormData();
    form.append('type', 'gender');
    form.append('file', new Blob(['email\nmaria.rossi@example.com\njohn.smith@example.com\n'], { type: 'text/csv' }), 'in.csv');
    const upload = await fetch(`${server.baseUrl}/api/jobs/bulk`, { method: 'POST', headers: auth, body: form });
    expect(upload.status).toBe(202);
    expect(upload.headers.get('x-ratelimit-limit')).toBe('200');
    const job = (await upload.json()) as { id: string };
    let status = '';
    const deadline = Date.now() + 20_000;
    while (status !== 'completed' && Date.now() < deadline) {
      status = ((await (await fetch(`${server.baseUrl}/api/jobs/${job.id}`, { headers: auth })).json()) as { status: string }).status;
      if (status !== 'completed') await new Promise((r) => setTimeout(r, 50));
    }
    expect(status).toBe('completed');
    const download = await fetch(`${server.baseUrl}/api/jobs/${job.id}/download?filter=found`, { headers: auth, redirect: 'manual' });
    expect(download.status).toBe(302);
    const file = await fetch(download.headers.get('location')!);
    expect(file.status).toBe(200);
    expect(await file.text()).toContain('maria.rossi@example.com');

    const signalled = Date.now();
    server.child.kill('SIGTERM');
    const code = await exitWithin(server.child, STOP_WITHIN_MS);
    expect(code).toBe(0);
    expect(Date.now() - signalled).toBeLessThan(STOP_WITHIN_MS);
    expect(server.stderr()).toContain('stopping');
    expect(server.stderr()).not.toMatch(/\n\s+at /);
    await expect(() => fetch(`${server.baseUrl}/healthz`)).rejects.toThrow();
  });

  it('on SIGTERM lets an upload in flight finish (202), then exits 0', async () => {
    const dataDir = tempDir('sluice-serve-');
    const { key } = await cliAccountWithKey(dataDir, 100, ENV);
    const server = await startServe(dataDir, ENV, ['--no-worker']);

    const boundary = 'inflight';
    const body = new PassThrough();
    body.write(`${partHead(boundary, { name: 'type' })}gender\r\n${partHead(boundary, { name: 'file', filename: 'a.csv' })}email\nmaria`);
    const pending = request(`${server.baseUrl}/api/jobs/bulk`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': `multipart/form-data; boundary=${boundary}` },
      body,
    });
    // Give the server time to start on the request, then ask it to stop.
    await new Promise((r) => setTimeout(r, 300));
    server.child.kill('SIGTERM');
    await new Promise((r) => setTimeout(r, 300));
    body.end(`.rossi@example.com\n\r\n--${boundary}--\r\n`);

    const response = await pending;
    const text = await response.body.text();
    expect({ status: response.statusCode, body: text }).toMatchObject({ status: 202 });
    expect(await exitWithin(server.child, STOP_WITHIN_MS)).toBe(0);
  });
});
