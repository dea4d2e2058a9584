import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/build-app.js';
import { loadConfig } from '../../src/config/load-config.js';
import { apiDeps } from '../../src/main/open-api.js';
import { openEngine } from '../../src/main/open-engine.js';
import { createLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { bearer, json, newAccount, runUntilDone, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { SMALL_JOBS, tempDir, type TestEngine } from '../support/test-engine.js';
import { startReceiver } from '../support/webhook-receiver.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const CSV = 'email\nmaria.rossi@example.com\njohn.smith@example.com\nnot-an-email\n';

/** An engine and API whose every log line, at every level, lands in `lines`, as JSON. */
async function loggedHarness(env: Record<string, string>, webhookCa: string): Promise<{ h: ApiHarness; lines: string[] }> {
  const lines: string[] = [];
  let partial = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const text = partial + chunk.toString('utf8');
      const parts = text.split('\n');
      partial = parts.pop()!;
      lines.push(...parts.filter(Boolean));
      done();
    },
  });
  const log = createLogger('trace', sink);
  const dataDir = tempDir();
  const fullEnv = { ...SMALL_JOBS, SLUICE_LOG_LEVEL: 'trace', SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', ...env, SLUICE_DATA_DIR: dataDir };
  const engine = Object.assign(await openEngine(loadConfig(fullEnv), log, { webhookCa }), { dataDir, env: fullEnv }) as TestEngine;
  const deps = apiDeps(engine);
  const app = await buildApp(deps, log);
  cleanups.push(async () => {
    await app.close();
    await engine.close();
  });
  return { h: { engine, deps, app }, lines };
}

describe('logs', () => {
  it('tell each job state change and webhook attempt in one info line with job and account ids, and never hold a key, password, session token, signing secret or signed URL', async () => {
    // The first attempt meets a 500 (which used to leave no line at all), the second succeeds.
    const r = await startReceiver({ behaviour: (n) => (n === 0 ? { status: 500, body: 'down' } : { status: 200, body: 'ok' }) });
    cleanups.push(() => r.close());
    const { h, lines } = await loggedHarness({}, r.ca);
    const a = await newAccount(h, { credits: 100 });

    const login = await h.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email: a.email, password: a.password } });
    expect(login.statusCode, login.body).toBe(200);
    const session = json(login).token as string;
    const created = await h.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(session), payload: { name: 'ci' } });
    expect(created.statusCode, created.body).toBe(200);
    const key = json(created).key as string;
    const hook = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url: `${r.url}?token=receiver-query-secret`, events: ['bulk.completed'] } });
    expect(hook.statusCode, hook.body).toBe(200);
    const signingSecret = json(hook).result.signing_secret as string;

    const upload = await uploadCsv(h, key, CSV, { downloadLink: 'true' });
    expect(upload.statusCode, upload.body).toBe(202);
    const jobId = json(upload).id as string;
    await runUntilDone(h, [jobId]);
    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, h.engine.deps.log, { pollMs: 20, backoffMs: [0, 0, 0] });
    expect(await sender.tick()).toBe(1);
    // The retry falls due a moment later: tick until the receiver has seen it.
    for (let i = 0; i < 100 && r.requests.length < 2; i++) {
      await sender.tick();
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const [, delivered] = await r.waitFor(2);
    const downloadUrl = (delivered!.json as { data: { download_url: string } }).data.download_url;
    expect(downloadUrl).toContain('X-Amz-Signature');
    const download = await h.app.inject({ method: 'GET', url: `/api/jobs/${jobId}/download`, headers: bearer(key) });
    expect(download.statusCode).toBe(302);

    const cancelled = await uploadCsv(h, key, CSV);
    const cancelledId = json(cancelled).id as string;
    expect((await h.app.inject({ method: 'POST', url: `/api/jobs/${cancelledId}/cancel`, headers: bearer(key) })).statusCode).toBe(200);

    // What a careless line elsewhere might pass: the redaction paths must catch it too.
    h.engine.deps.log.info(
      { headers: { authorization: `Bearer ${key}` }, password: a.password, token: session, signing_secret: signingSecret, payload: delivered!.json, url: downloadUrl },
      'a line carrying secrets',
    );

    const records = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(records.length).toBeGreaterThan(10);
    for (const record of records) expect(new Date(record.time as string).toISOString()).toBe(record.time);
    const forbidden = [key, a.key, a.password, session, signingSecret, 'X-Amz-Signature', 'receiver-query-secret', downloadUrl.split('?')[1]!];
    for (const line of lines) for (const secret of forbidden) expect(line, line).not.toContain(secret);

    const info = (msg: string) => records.filter((r) => r.msg === msg && r.level === 30);
    const ids = { jobId, accountId: a.id };
    expect(info('job created')).toEqual(expect.arrayContaining([expect.objectContaining(ids), expect.objectContaining({ jobId: cancelledId, accountId: a.id })]));
    expect(info('job started')).toEqual([expect.objectContaining(ids)]);
    expect(info('job completed')).toEqual([expect.objectContaining(ids)]);
    expect(info('job cancelled')).toEqual([expect.objectContaining({ jobId: cancelledId, accountId: a.id })]);
    expect(info('webhook attempt failed; will try again')).toEqual([expect.objectContaining({ ...ids, httpStatus: 500, attempt: 1, status: 'pending' })]);
    expect(info('webhook delivered')).toEqual([expect.objectContaining({ ...ids, httpStatus: 200, attempt: 2 })]);
  });
});
