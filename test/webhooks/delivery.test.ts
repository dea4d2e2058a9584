import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock, type Clock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';
import type { Resolver } from '../../src/webhooks/address-policy.js';
import type { Delivery } from '../../src/storage/records.js';
import type { StoreKind } from '../../src/storage/store.js';
import { RETRY_POLICY } from '../../src/webhooks/webhook-sender.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, runUntilDone, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, startTelegramStandIn, verifyDelivery, type Behaviour, type Receiver } from '../support/webhook-receiver.js';

const CSV = 'email,name\nanna.schmidt@example.com,Anna\njohn.smith@example.org,John\nnot-an-email,X\n';
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

async function receiver(behaviour?: Behaviour): Promise<Receiver> {
  const r = await startReceiver(behaviour ? { behaviour } : {});
  cleanups.push(() => r.close());
  return r;
}

interface Setup {
  h: ApiHarness;
  key: string;
  hook: { id: string; signing_secret: string };
  sender: ReturnType<typeof webhookSender>;
}

/** An engine that trusts the receiver's certificate, an account, and a webhook on the receiver. */
async function setup(
  r: Receiver,
  options: { clock?: Clock; env?: Record<string, string>; events?: string[]; resolve?: Resolver; url?: string; store?: StoreKind } = {},
): Promise<Setup> {
  let placed: Record<string, string> = {};
  if (options.store !== undefined) {
    const { env, drop } = await storeEnv(options.store);
    // Runs after closeHarnesses (see afterEach): the database goes once no engine uses it.
    cleanups.push(drop);
    placed = env;
  }
  const env = { ...placed, SLUICE_WEBHOOK_ALLOW_PRIVATE: options.resolve ? 'false' : 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '2000', ...options.env };
  const h = await openApiHarness(env, options.clock, { webhookCa: r.ca, ...(options.resolve ? { resolve: options.resolve } : {}) });
  const { key } = await newAccount(h, { credits: 100 });
  const created = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url: options.url ?? r.url, events: options.events ?? ['bulk.completed'] } });
  expect(created.statusCode, created.body).toBe(200);
  const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 });
  return { h, key, hook: json(created).result, sender };
}

async function finishedJob(s: Setup, downloadLink = 'true'): Promise<string> {
  const upload = await uploadCsv(s.h, s.key, CSV, { downloadLink });
  const jobId = json(upload).id as string;
  await runUntilDone(s.h, [jobId]);
  return jobId;
}

function deliveries(s: Setup): Promise<Delivery[]> {
  return s.h.engine.webhooks.deliveries.list(s.hook.id, 50);
}

/**
 * Another engine on the same data dir and store, with its own connections: as a second process
 * would be, so the store, not one process's event loop, has to keep the two apart.
 */
async function secondProcess(s: Setup, r: Receiver): Promise<ApiHarness> {
  return openApiHarness(s.h.engine.env, undefined, { webhookCa: r.ca });
}

describe('bulk.completed delivery', () => {
  it('reaches a real HTTPS receiver with both signatures valid over the raw bytes, and its download_url serves the result', async () => {
    const r = await receiver();
    const s = await setup(r);
    const jobId = await finishedJob(s);
    expect(await s.sender.tick()).toBe(1);
    const [request] = await r.waitFor(1);
    expect(verifyDelivery(request!, s.hook.signing_secret)).toEqual([]);
    expect(request!.headers['x-sluice-event']).toBe('bulk.completed');

    const body = request!.json as any;
    expect(body).toMatchObject({ event: 'bulk.completed', data: { id: jobId, type: 'gender', status: 'completed', rows: { total: 3, invalid: 1 }, credits_used: 2 } });
    expect(Date.parse(body.created_at)).not.toBeNaN();
    expect(body.data.download_url).toBe(body.data.downloads.all.download_url);
    expect(Date.parse(body.data.expires_at)).toBeGreaterThan(Date.now());
    const expected = await s.h.engine.jobService.openResult(jobId, 'all');
    let bytes = '';
    for await (const chunk of expected) bytes += String(chunk);
    const fetched = await fetch(body.data.download_url);
    expect(fetched.status).toBe(200);
    expect(await fetched.text()).toBe(bytes);
    const found = await fetch(body.data.downloads.found.download_url);
    expect((await found.text()).split('\n').filter(Boolean)).toHaveLength(3); // header + two found rows

    const [record] = await deliveries(s);
    expect(record).toMatchObject({ status: 'success', attempts: 1, responseStatus: 200, responseBody: 'ok', messageId: request!.headers['webhook-id'] });
    expect((record!.payload as any).data.download_url).toBe(body.data.download_url);
  });

  it('carries no download_url for a job created without download_link', async () => {
    const r = await receiver();
    const s = await setup(r);
    await finishedJob(s, 'false');
    await s.sender.tick();
    const [request] = await r.waitFor(1);
    expect((request!.json as any).data).not.toHaveProperty('download_url');
  });
});

// One attempt per delivery, whichever of several processes relays and claims: a guarantee of the store.
describe.each(TEST_STORES)('senders racing over one store, on %s', (store) => {
  it('relays each committed event into one delivery, however many relays run at once', async () => {
    const r = await receiver();
    const s = await setup(r, { store });
    await finishedJob(s);
    const other = await secondProcess(s, r);
    const now = Date.now();
    const relays = [s.h, other, s.h, other].map((h) => h.engine.webhooks.deliveries.relayOutbox(now));
    expect((await Promise.all(relays)).reduce((a, b) => a + b, 0)).toBe(1);
    expect(await deliveries(s)).toHaveLength(1);
  });

  it('makes one attempt per event even when several senders in two processes tick at once', async () => {
    const r = await receiver();
    const s = await setup(r, { store });
    await finishedJob(s);
    const other = await secondProcess(s, r);
    const senders = [s.sender, webhookSender(s.h.engine.webhooks, s.h.engine.deps.clock, silentLogger(), { pollMs: 20 })];
    for (let i = 0; i < 2; i++) senders.push(webhookSender(other.engine.webhooks, other.engine.deps.clock, silentLogger(), { pollMs: 20 }));
    const attempts = await Promise.all(senders.map((sender) => sender.tick()));
    expect(attempts.reduce((a, b) => a + b, 0)).toBe(1);
    expect(r.requests).toHaveLength(1);
    expect(await deliveries(s)).toMatchObject([{ status: 'success', attempts: 1 }]);
  });
});

describe('retries', () => {
  async function tickAt(s: Setup, clock: FakeClock, at: number): Promise<void> {
    clock.set(at);
    await s.sender.tick();
  }

  it('a receiver that fails 3 times then succeeds gets 4 attempts, 30 s, 2 min and 10 min apart, all with one webhook-id', async () => {
    const clock = new FakeClock(Date.now());
    const r = await receiver((n) => (n < 3 ? { status: 500, body: `no ${n}` } : { status: 204 }));
    const s = await setup(r, { clock });
    await finishedJob(s);
    const start = clock.now();
    await s.sender.tick();
    const waits: number[] = [];
    for (let i = 0; i < 3; i++) {
      const [d] = await deliveries(s);
      expect(d).toMatchObject({ status: 'pending', attempts: i + 1, responseStatus: 500, responseBody: `no ${i}` });
      waits.push(d!.nextAttemptAt! - d!.lastAttemptAt!);
      // One millisecond early, nothing is sent.
      await tickAt(s, clock, d!.nextAttemptAt! - 1);
      expect(r.requests).toHaveLength(i + 1);
      await tickAt(s, clock, d!.nextAttemptAt!);
    }
    expect(waits).toEqual([30_000, 120_000, 600_000]);
    expect((await deliveries(s))[0]).toMatchObject({ status: 'success', attempts: 4, responseStatus: 204, responseBody: null });
    expect(r.requests).toHaveLength(4);
    expect(r.messageIds()).toHaveLength(1);
    // Every attempt is freshly signed: the timestamps move with the clock.
    expect(Number(r.requests[3]!.headers['webhook-timestamp'])).toBe(Math.floor((start + 750_000) / 1000));
  });

  it('a receiver that always fails gets exactly 4 attempts, then the delivery is failed and never retried', async () => {
    const clock = new FakeClock(Date.now());
    const r = await receiver(() => ({ status: 503 }));
    const s = await setup(r, { clock });
    await finishedJob(s);
    await s.sender.tick();
    for (let i = 0; i < 10; i++) {
      clock.advance(RETRY_POLICY.maxRetryAfterMs);
      await s.sender.tick();
    }
    expect(r.requests).toHaveLength(RETRY_POLICY.attempts);
    expect((await deliveries(s))[0]).toMatchObject({ status: 'failed', attempts: 4, responseStatus: 503, nextAttemptAt: null });
  });

  it.each([
    ['120', 120_000],
    ['3600', 15 * 60_000],
  ])('honours Retry-After: %s seconds (capped at 15 minutes) on a 429', async (header, wait) => {
    const clock = new FakeClock(Date.now());
    const r = await receiver((n) => (n === 0 ? { status: 429, headers: { 'retry-after': header } } : { status: 200 }));
    const s = await setup(r, { clock });
    await finishedJob(s);
    await s.sender.tick();
    const [d] = await deliveries(s);
    expect(d).toMatchObject({ status: 'pending', attempts: 1, responseStatus: 429 });
    expect(d!.nextAttemptAt! - d!.lastAttemptAt!).toBe(wait);
    clock.advance(wait);
    await s.sender.tick();
    expect((await deliveries(s))[0]!.status).toBe('success');
  });

  it('gives up on an attempt the receiver holds past the time-out, and records it as a timeout', async () => {
    const r = await receiver(() => ({ hang: true }));
    const s = await setup(r, { env: { SLUICE_WEBHOOK_TIMEOUT_MS: '300' } });
    await finishedJob(s);
    const started = Date.now();
    await s.sender.tick();
    expect(Date.now() - started).toBeLessThan(3_000);
    expect((await deliveries(s))[0]).toMatchObject({ status: 'pending', attempts: 1, responseStatus: null, errorCode: 'delivery_timeout' });
  });

  it('does not follow a redirect', async () => {
    const target = await receiver();
    const r = await receiver(() => ({ status: 302, headers: { location: target.url } }));
    const s = await setup(r);
    await finishedJob(s);
    await s.sender.tick();
    expect((await deliveries(s))[0]).toMatchObject({ status: 'pending', responseStatus: 302 });
    expect(target.requests).toHaveLength(0);
  });
});

describe('pausing, deleting and redelivering', () => {
  it('a paused webhook gets nothing until it is resumed; a deleted one never again', async () => {
    const r = await receiver();
    const s = await setup(r);
    const put = (payload: object) => s.h.app.inject({ method: 'PUT', url: '/api/webhooks', headers: bearer(s.key), payload: { id: s.hook.id, url: r.url, ...payload } });
    await finishedJob(s);
    await s.h.engine.webhooks.deliveries.relayOutbox(Date.now());
    expect((await put({ is_active: false })).statusCode).toBe(200);
    expect(await s.sender.tick()).toBe(0);
    expect(r.requests).toHaveLength(0);
    await put({ is_active: true });
    expect(await s.sender.tick()).toBe(1);
    expect(r.requests).toHaveLength(1);

    await finishedJob(s);
    await s.h.engine.webhooks.deliveries.relayOutbox(Date.now());
    await s.h.app.inject({ method: 'DELETE', url: `/api/webhooks/${s.hook.id}`, headers: bearer(s.key) });
    expect(await s.sender.tick()).toBe(0);
    expect(r.requests).toHaveLength(1);
  });

  it('events of a paused webhook are not queued for it', async () => {
    const r = await receiver();
    const s = await setup(r);
    await s.h.app.inject({ method: 'PUT', url: '/api/webhooks', headers: bearer(s.key), payload: { id: s.hook.id, url: r.url, is_active: false } });
    await finishedJob(s);
    await s.sender.tick();
    expect(await deliveries(s)).toHaveLength(0);
  });

  it('an admin re-sends a failed delivery, which keeps its webhook-id', async () => {
    const clock = new FakeClock(Date.now());
    let healthy = false;
    const r = await receiver(() => (healthy ? { status: 200 } : { status: 500 }));
    const s = await setup(r, { clock });
    await finishedJob(s);
    for (let i = 0; i < RETRY_POLICY.attempts; i++) {
      await s.sender.tick();
      clock.advance(RETRY_POLICY.maxRetryAfterMs);
    }
    const [failed] = await deliveries(s);
    expect(failed!.status).toBe('failed');
    healthy = true;
    const resend = await s.h.app.inject({ method: 'POST', url: `/api/webhooks/deliveries/${failed!.id}/redeliver`, headers: bearer(s.key) });
    expect(resend.statusCode, resend.body).toBe(200);
    expect(json(resend).result).toMatchObject({ status: 'pending', attempts: 0, message_id: failed!.messageId });
    await s.sender.tick();
    expect(r.requests.at(-1)!.headers['webhook-id']).toBe(failed!.messageId);
    expect((await deliveries(s))[0]).toMatchObject({ status: 'success', attempts: 1 });
    const again = await s.h.app.inject({ method: 'POST', url: `/api/webhooks/deliveries/${failed!.id}/redeliver`, headers: bearer(s.key) });
    expect(again.statusCode).toBe(409);
  });

  it('lists the 50 most recent deliveries, newest first, in the spec fields', async () => {
    const r = await receiver();
    const s = await setup(r);
    for (let i = 0; i < 3; i++) await s.h.app.inject({ method: 'POST', url: '/api/webhooks/test', headers: bearer(s.key), payload: { id: s.hook.id } });
    const list = json(await s.h.app.inject({ method: 'GET', url: `/api/webhooks/deliveries?webhook_id=${s.hook.id}`, headers: bearer(s.key) }));
    // Spec 4.2: a bare array of delivery objects, not the {success, result} envelope.
    expect(Array.isArray(list)).toBe(true);
    expect(list).toHaveLength(3);
    for (const d of list) {
      expect(Object.keys(d)).toEqual(expect.arrayContaining(['id', 'webhook_id', 'event_type', 'payload', 'status', 'attempts', 'response_status', 'response_body', 'last_attempt_at', 'created_at']));
      expect(d).toMatchObject({ webhook_id: s.hook.id, event_type: 'test', status: 'success', attempts: 1, response_status: 200 });
    }
  });
});

describe('the test endpoint', () => {
  async function test(s: Setup) {
    const response = await s.h.app.inject({ method: 'POST', url: '/api/webhooks/test', headers: bearer(s.key), payload: { id: s.hook.id } });
    expect(response.statusCode).toBe(200);
    expect(json(response).success).toBe(true);
    return json(response).result;
  }

  it('sends event test with the headers of a real delivery and reports delivered', async () => {
    const r = await receiver(() => ({ status: 200, body: 'thanks' }));
    const s = await setup(r);
    expect(await test(s)).toEqual({ status: 'delivered', url: r.url, status_code: 200, response_body: 'thanks' });
    const [request] = r.requests;
    expect(verifyDelivery(request!, s.hook.signing_secret)).toEqual([]);
    expect(request!.json).toMatchObject({ event: 'test', data: { test: true, message: expect.any(String) } });
    expect(request!.headers['x-sluice-event']).toBe('test');
  });

  it('reports a rejection as failed with the status and the first 512 bytes of the body, still HTTP 200', async () => {
    const r = await receiver(() => ({ status: 400, body: 'x'.repeat(5000) }));
    const s = await setup(r);
    expect(await test(s)).toEqual({ status: 'failed', url: r.url, status_code: 400, response_body: 'x'.repeat(512) });
    expect((await deliveries(s))[0]).toMatchObject({ eventType: 'test', status: 'failed', responseStatus: 400 });
  });

  it('reports a receiver that cannot be reached with a fixed safe error and no status', async () => {
    const r = await receiver();
    const url = r.url;
    await r.close();
    const s = await setup(r, { url });
    const result = await test(s);
    expect(result).toEqual({ status: 'failed', url, error: 'The receiver could not be reached.' });
  });
});

describe('address rules at delivery', () => {
  it('does not connect when a name that resolved to a public address at creation now resolves to loopback', async () => {
    const r = await receiver();
    let answer = '93.184.215.14';
    const resolve: Resolver = async () => [{ address: answer, family: 4 }];
    const port = new URL(r.url).port;
    const s = await setup(r, { resolve, url: `https://flip.example.com:${port}/hook` });
    answer = '127.0.0.1';
    await finishedJob(s);
    await s.sender.tick();
    expect(r.requests).toHaveLength(0);
    expect((await deliveries(s))[0]).toMatchObject({ status: 'pending', attempts: 1, errorCode: 'blocked_address', responseStatus: null });
    const result = json(await s.h.app.inject({ method: 'POST', url: '/api/webhooks/test', headers: bearer(s.key), payload: { id: s.hook.id } })).result;
    expect(result).toEqual({ status: 'failed', url: `https://flip.example.com:${port}/hook`, error: 'The webhook URL does not resolve to a public address.' });
    expect(r.requests).toHaveLength(0);
  });
});

describe('other events and destinations', () => {
  it('sends lookup.completed for a single lookup to accounts that subscribe, and writes nothing for others', async () => {
    const r = await receiver();
    const s = await setup(r, { events: ['lookup.completed'] });
    const lookup = await s.h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(s.key), payload: { email: 'maria.garcia@example.com' } });
    expect(lookup.statusCode, lookup.body).toBe(200);
    await s.sender.tick();
    const [request] = await r.waitFor(1);
    expect(verifyDelivery(request!, s.hook.signing_secret)).toEqual([]);
    expect(request!.json).toMatchObject({ event: 'lookup.completed', data: { lookup: 'gender', target: 'maria.garcia@example.com', credits: 1 } });

    // The tick relayed the first event; an event written for the other account would be relayed now.
    const other = await newAccount(s.h);
    const unsubscribed = await s.h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(other.key), payload: { email: 'maria.garcia@example.com' } });
    expect(unsubscribed.statusCode, unsubscribed.body).toBe(200);
    expect(await s.h.engine.webhooks.deliveries.relayOutbox(Date.now())).toBe(0);
  });

  it('sends a telegram destination a short text, without signatures, through the configured API base', async () => {
    const telegram = await startTelegramStandIn();
    cleanups.push(() => telegram.close());
    const h = await openApiHarness({ SLUICE_WEBHOOK_ALLOW_PRIVATE: 'false', SLUICE_TELEGRAM_API_URL: telegram.baseUrl });
    const { key } = await newAccount(h);
    const created = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { kind: 'telegram', telegram_chat_id: '-100200', telegram_bot_token: '123:secret-token' } });
    expect(created.statusCode, created.body).toBe(200);
    const hook = json(created).result;
    expect(hook).toMatchObject({ kind: 'telegram', url: '', telegram_chat_id: '-100200' });
    expect(hook).not.toHaveProperty('signing_secret');
    expect(JSON.stringify(json(await h.app.inject({ method: 'GET', url: `/api/webhooks/${hook.id}`, headers: bearer(key) })))).not.toContain('secret-token');

    const test = json(await h.app.inject({ method: 'POST', url: '/api/webhooks/test', headers: bearer(key), payload: { id: hook.id } }));
    expect(test.result).toMatchObject({ status: 'delivered', url: '', status_code: 200 });
    const upload = await uploadCsv(h, key, CSV);
    await runUntilDone(h, [json(upload).id]);
    await webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 }).tick();
    await telegram.waitFor(2);
    expect(telegram.messages[0]).toMatchObject({ token: '123:secret-token', chatId: '-100200' });
    expect(telegram.messages[1]!.text).toContain(json(upload).id);
    expect(telegram.messages[1]!.text).toMatch(/completed: 3 rows, 2 found, 1 invalid, 2 credits/);
  });
});
