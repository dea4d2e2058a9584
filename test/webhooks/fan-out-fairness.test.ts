import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/shared/logger.js';
import { MAX_WEBHOOKS_PER_ACCOUNT } from '../../src/webhooks/webhook-store.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, testCertificate, type Receiver } from '../support/webhook-receiver.js';

/**
 * Issue 16 item 4 at small scale: one account's webhooks fan a few lookups out into a backlog, and
 * another account's single delivery must not wait behind it. Orders and claim sets, no timings.
 */
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

async function open(kind: (typeof TEST_STORES)[number]): Promise<{ h: ApiHarness; r: Receiver }> {
  const r = await startReceiver({});
  cleanups.push(() => r.close());
  const { env, drop } = await storeEnv(kind);
  cleanups.push(drop);
  const h = await openApiHarness({ ...env, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '2000' }, undefined, { webhookCa: r.ca });
  return { h, r };
}

async function addWebhook(h: ApiHarness, key: string, url: string) {
  return h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url, events: ['lookup.completed'] } });
}

async function lookup(h: ApiHarness, key: string, email: string): Promise<number> {
  const answer = await h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(key), payload: { email } });
  expect(answer.statusCode, answer.body).toBe(200);
  return json(answer).credits as number;
}

/**
 * A receiver that answers nothing until released; `events` gets its arrivals and each request's
 * end (released, or cut by the sender's attempt timeout) in order.
 */
async function startHangingReceiver(events: string[]): Promise<{ url: string; arrived: () => number; release: () => void }> {
  const { cert, key } = await testCertificate();
  const held: Array<() => void> = [];
  let arrived = 0;
  const arrivals = new Set<() => void>();
  const server = https.createServer({ cert, key }, (req, res) => {
    req.resume();
    arrived++;
    events.push('hang:arrived');
    res.on('close', () => events.push('hang:ended'));
    held.push(() => res.writeHead(200).end('late'));
    for (const notify of arrivals) notify();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });
  const { port } = server.address() as AddressInfo;
  return { url: `https://127.0.0.1:${port}/hook`, arrived: () => arrived, release: () => held.splice(0).forEach((answer) => answer()) };
}

describe.each(TEST_STORES)('webhook fan-out on %s', (kind) => {
  it("attempts another account's delivery while one account's receiver hangs, without waiting for those attempts to end", async () => {
    const { h } = await open(kind);
    const events: string[] = [];
    const hanging = await startHangingReceiver(events);
    const r = await startReceiver({ behaviour: () => (events.push('quick:arrived'), { status: 200, body: 'ok' }) });
    cleanups.push(() => r.close());
    const slow = await newAccount(h);
    const quick = await newAccount(h);
    for (let i = 0; i < 3; i++) expect((await addWebhook(h, slow.key, `${hanging.url}?slow=${i}`)).statusCode).toBe(200);
    const quickHook = json(await addWebhook(h, quick.key, `${r.url}?quick`)).result.id as string;
    await lookup(h, slow.key, 'anna.schmidt@example.com');

    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20, concurrency: 4, inFlightPerAccount: 2 });
    const running = sender.run();
    try {
      while (hanging.arrived() < 2) await sleep(5);
      // The quick account's event is committed while the slow account's two attempts hang.
      await lookup(h, quick.key, 'maria.garcia@example.com');
      await r.waitFor(1);
      while ((await h.engine.webhooks.deliveries.list(quickHook, 1))[0]?.status !== 'success') await sleep(5);
      events.push('quick:recorded');
      // Two of the slow account's three deliveries in flight (its cap), neither ended before the
      // quick one arrived and was recorded.
      expect(events).toEqual(['hang:arrived', 'hang:arrived', 'quick:arrived', 'quick:recorded']);
    } finally {
      hanging.release();
      sender.stop();
      await running;
    }
    // stop() let the attempts in flight end and record.
    const slowHooks = (await h.engine.webhooks.store.list(slow.id, 10, 0)).webhooks;
    const attempts = (await Promise.all(slowHooks.map((w) => h.engine.webhooks.deliveries.list(w.id, 10)))).flat().map((d) => d.attempts);
    expect(attempts.sort()).toEqual([0, 1, 1]);
  });


  it("delivers another account's one event in the first round, however many deliveries one account queued before it", async () => {
    const { h, r } = await open(kind);
    const noisy = await newAccount(h);
    const quiet = await newAccount(h);
    for (let i = 0; i < 10; i++) expect((await addWebhook(h, noisy.key, `${r.url}?noisy=${i}`)).statusCode).toBe(200);
    expect((await addWebhook(h, quiet.key, `${r.url}?quiet`)).statusCode).toBe(200);

    // Two paid lookups and four free repeats: the repeats announce nothing, so 2 events x 10 webhooks.
    await lookup(h, noisy.key, 'anna.schmidt@example.com');
    await lookup(h, noisy.key, 'john.smith@example.org');
    for (let i = 0; i < 4; i++) expect(await lookup(h, noisy.key, 'anna.schmidt@example.com')).toBe(0);
    await lookup(h, quiet.key, 'maria.garcia@example.com');

    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20, concurrency: 4, inFlightPerAccount: 2 });
    expect(await sender.tick()).toBe(3);
    const first = r.requests.map((q) => (q.path.includes('quiet') ? 'quiet' : 'noisy')).sort();
    expect(first).toEqual(['noisy', 'noisy', 'quiet']);

    while ((await sender.tick()) > 0);
    const paths = r.requests.map((q) => q.path);
    expect(paths.filter((p) => p.includes('noisy'))).toHaveLength(20);
    expect(paths.filter((p) => p.includes('quiet'))).toHaveLength(1);
  });

  it(`refuses the webhook past ${MAX_WEBHOOKS_PER_ACCOUNT} with 409 too_many_webhooks, and takes one again after a delete`, async () => {
    const { h, r } = await open(kind);
    const account = await newAccount(h);
    const made: string[] = [];
    for (let i = 0; i < MAX_WEBHOOKS_PER_ACCOUNT; i++) {
      const created = await addWebhook(h, account.key, `${r.url}?n=${i}`);
      expect(created.statusCode, created.body).toBe(200);
      made.push(json(created).result.id as string);
    }
    const refused = await addWebhook(h, account.key, `${r.url}?n=over`);
    expect(refused.statusCode).toBe(409);
    expect(json(refused)).toMatchObject({ success: false, result: { code: 'too_many_webhooks' } });
    expect((await h.app.inject({ method: 'DELETE', url: `/api/webhooks/${made[0]}`, headers: bearer(account.key) })).statusCode).toBe(200);
    expect((await addWebhook(h, account.key, `${r.url}?n=again`)).statusCode).toBe(200);
  });
});
