import { afterEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import { startReceiver, verifyDelivery, type Receiver } from '../support/webhook-receiver.js';

/**
 * Issue 27, item 8: the spec names an event for a new API key and a credit alert without naming
 * them. `api_key.created` goes out when a key is made (in the key's own transaction), and
 * `credits.low` once per crossing of the threshold the account sets, both signed and delivered
 * through the outbox like `bulk.completed`.
 */
const receivers: Receiver[] = [];
afterEach(async () => {
  await closeHarnesses();
  for (const r of receivers.splice(0)) await r.close();
});

describe.each(TEST_STORES)('account events on %s', (kind) => {
  async function setup(credits: number) {
    const r = await startReceiver({ protocol: 'http' });
    receivers.push(r);
    const h = await openStoreHarness(kind, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_RATE_LIMIT_PER_MINUTE: '10000' });
    const a = await newAccount(h, { credits });
    const hook = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(a.key), payload: { url: r.url, events: ['api_key.created', 'credits.low'] } });
    expect(hook.statusCode, hook.body).toBe(200);
    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20, creditSweepMs: 0 });
    return { r, h, a, secret: json(hook).result.signing_secret as string, sender };
  }
  const events = (r: Receiver, name: string) => r.requests.filter((q) => (q.json as { event: string }).event === name);
  let n = 0;
  const spend = async (h: ApiHarness, key: string) => {
    const r = await h.app.inject({ method: 'POST', url: '/api/lookup/email/gender', headers: bearer(key), payload: { email: `maria.rossi${++n}-${Date.now()}@example.com` } });
    expect(r.statusCode, r.body).toBe(200);
    expect(json(r).credits).toBe(1);
  };

  it('sends api_key.created, signed, with the key but never its secret', async () => {
    const { r, h, a, secret, sender } = await setup(100);
    const made = await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(a.key), payload: { name: 'ci', role: 'tech' } });
    expect(made.statusCode, made.body).toBe(200);
    await sender.tick();
    const [request] = await r.waitFor(1);
    expect(verifyDelivery(request!, secret)).toEqual([]);
    expect(request!.json).toMatchObject({ event: 'api_key.created', data: { id: json(made).id, name: 'ci', role: 'tech', key_prefix: json(made).key_prefix } });
    expect(request!.rawBody.toString()).not.toContain(json(made).key);
  });

  it('sends credits.low once per crossing of the threshold the account sets, not on every charge', async () => {
    const { r, h, a, secret, sender } = await setup(55);
    const set = await h.app.inject({ method: 'PUT', url: '/api/account/credit-alert', headers: bearer(a.key), payload: { threshold: 50 } });
    expect(json(set)).toEqual({ threshold: 50, fired: false });
    await sender.tick();
    // 55 -> 45: the crossing is at the sixth charge; a sweep after every charge.
    for (let i = 0; i < 10; i++) {
      await spend(h, a.key);
      await sender.tick();
    }
    await r.waitFor(1);
    const low = events(r, 'credits.low');
    expect(low).toHaveLength(1);
    expect(verifyDelivery(low[0]!, secret)).toEqual([]);
    expect(low[0]!.json).toMatchObject({ event: 'credits.low', data: { threshold: 50, available: 49, credits: 49, reserved: 0 } });
    expect(json(await h.app.inject({ method: 'GET', url: '/api/account/credit-alert', headers: bearer(a.key) }))).toEqual({ threshold: 50, fired: true });

    // Back above the threshold re-arms it; the next fall sends the second event.
    await h.engine.deps.billing.addCredits(a.id, 5, 'topup', Date.now()); // 45 -> 50: at the threshold, not below it
    await sender.tick();
    expect(json(await h.app.inject({ method: 'GET', url: '/api/account/credit-alert', headers: bearer(a.key) })).fired).toBe(false);
    // 50 -> 42: below again at the first charge, and one event for the eight.
    for (let i = 0; i < 8; i++) {
      await spend(h, a.key);
      await sender.tick();
    }
    await r.waitFor(2);
    expect(events(r, 'credits.low')).toHaveLength(2);
    expect(events(r, 'credits.low')[1]!.json).toMatchObject({ data: { available: 49 } });
    expect(verifyDelivery(events(r, 'credits.low')[1]!, secret)).toEqual([]);
  });

  it('lets a readonly key read the alert but not set it, and null removes it', async () => {
    const { h, a } = await setup(10);
    const ro = await addKey(h, a.id, 'readonly', 'viewer');
    expect((await h.app.inject({ method: 'PUT', url: '/api/account/credit-alert', headers: bearer(ro.key), payload: { threshold: 5 } })).statusCode).toBe(403);
    expect(json(await h.app.inject({ method: 'GET', url: '/api/account/credit-alert', headers: bearer(ro.key) }))).toEqual({ threshold: null, fired: false });
    await h.app.inject({ method: 'PUT', url: '/api/account/credit-alert', headers: bearer(a.key), payload: { threshold: 5 } });
    const removed = await h.app.inject({ method: 'PUT', url: '/api/account/credit-alert', headers: bearer(a.key), payload: { threshold: null } });
    expect(json(removed)).toEqual({ threshold: null, fired: false });
  });
});
