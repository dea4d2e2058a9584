import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { afterEach, describe, expect, it } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { standardSignature } from '../../src/webhooks/sign.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import { startReceiver, type ReceivedRequest, type Receiver } from '../support/webhook-receiver.js';

/**
 * Issue 27, item 7: rolling an API key with a grace period, keys that end, and rotating a
 * webhook's signing secret with both signatures sent during the overlap (Standard Webhooks allows
 * several `v1,` signatures), then only the new one.
 */
const HOUR = 3_600_000;

function call(h: ApiHarness, key: string, method: 'GET' | 'POST', url: string, payload?: object) {
  return h.app.inject({ method, url, headers: bearer(key), ...(payload === undefined ? {} : { payload }) });
}

async function works(h: ApiHarness, key: string): Promise<boolean> {
  const status = (await call(h, key, 'GET', '/api/account')).statusCode;
  expect([200, 401]).toContain(status);
  return status === 200;
}

/** Whether each signature header carries a valid signature made with `secret`. */
function signedWith(request: ReceivedRequest, secret: string): { legacy: boolean; standard: boolean } {
  const legacy = `sha256=${createHmac('sha256', secret).update(request.rawBody).digest('hex')}`;
  const { 'webhook-id': id, 'webhook-timestamp': timestamp } = request.headers;
  const standard = standardSignature(request.rawBody, secret, id!, Number(timestamp));
  return { legacy: request.headers['x-sluice-signature']!.split(' ').includes(legacy), standard: request.headers['webhook-signature']!.split(' ').includes(standard) };
}

/** The Standard Webhooks reference library, which accepts a delivery when any of its `v1,` entries matches (and its timestamp is within 5 minutes of now). */
function libraryAccepts(request: ReceivedRequest, secret: string): boolean {
  try {
    new Webhook(secret).verify(request.rawBody.toString('utf8'), request.headers);
    return true;
  } catch {
    return false;
  }
}

describe.each(TEST_STORES)('rotation, on %s', (kind) => {
  let receiver: Receiver | undefined;
  afterEach(async () => {
    await closeHarnesses();
    await receiver?.close();
    receiver = undefined;
  });

  it('a rolled key keeps working for its grace period beside the new one, then stops; a key is rolled once', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 1));
    const h = await openStoreHarness(kind, {}, clock);
    const a = await newAccount(h);
    const old = await addKey(h, a.id, 'tech', 'deploy');
    const rolled = await call(h, old.key, 'POST', '/api/account/keys/roll', { id: old.keyId, grace_seconds: 3600 });
    expect(rolled.statusCode, rolled.body).toBe(200);
    const body = json(rolled);
    expect(body).toMatchObject({ name: 'deploy', role: 'tech', is_active: true, expires_at: null, rolled: { id: old.keyId, replaced_by: body.id } });
    expect(body.rolled.expires_at).toBe(new Date(clock.now() + HOUR).toISOString());
    expect(body.key).not.toBe(old.key);

    expect(await works(h, old.key)).toBe(true);
    expect(await works(h, body.key)).toBe(true);
    // Rolling the old key again would mint a key per call: refused; its replacement may be rolled.
    const again = await call(h, a.key, 'POST', '/api/account/keys/roll', { id: old.keyId });
    expect(again.statusCode, again.body).toBe(409);
    expect(json(again).code).toBe('invalid_state');

    clock.advance(HOUR - 1000);
    expect(await works(h, old.key)).toBe(true);
    clock.advance(1000);
    expect(await works(h, old.key)).toBe(false);
    expect(await works(h, body.key)).toBe(true);

    // The sweep revokes it, so it no longer takes a place in the api_keys quota.
    const keys = json(await call(h, a.key, 'GET', '/api/account/keys')).keys;
    expect(keys.find((k: { id: string }) => k.id === old.keyId)).toMatchObject({ revoked: true, is_active: false });
    const audit = json(await call(h, a.key, 'GET', '/api/account/audit')).entries.map((e: { action: string; target_id: string }) => `${e.action} ${e.target_id}`);
    expect(audit).toContain(`key.rolled ${old.keyId}`);
    expect(audit).toContain(`key.created ${body.id}`);
  });

  it('grace 0 ends the old key at once; a readonly key may not roll, a tech key may not roll an admin key', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech', 'ci');
    const viewer = await addKey(h, a.id, 'readonly', 'viewer');
    expect((await call(h, viewer.key, 'POST', '/api/account/keys/roll', { id: viewer.keyId })).statusCode).toBe(403);
    expect((await call(h, tech.key, 'POST', '/api/account/keys/roll', { id: a.keyId })).statusCode).toBe(403);
    const rolled = await call(h, a.key, 'POST', '/api/account/keys/roll', { id: tech.keyId, grace_seconds: 0 });
    expect(rolled.statusCode, rolled.body).toBe(200);
    expect(await works(h, tech.key)).toBe(false);
    expect(await works(h, json(rolled).key)).toBe(true);
  });

  it('a key made with expires_at is refused from then on, and its roll keeps that end', async () => {
    const clock = new FakeClock(Date.UTC(2026, 10, 1));
    const h = await openStoreHarness(kind, {}, clock);
    const a = await newAccount(h);
    const end = new Date(clock.now() + 2 * HOUR).toISOString();
    const made = await call(h, a.key, 'POST', '/api/account/keys', { name: 'contractor', role: 'readonly', expires_at: end });
    expect(made.statusCode, made.body).toBe(200);
    expect(json(made).expires_at).toBe(end);
    const rolled = json(await call(h, a.key, 'POST', '/api/account/keys/roll', { id: json(made).id, grace_seconds: 7 * 24 * 3600 }));
    // A roll never lengthens a key's life: both end when the first was to.
    expect(rolled.expires_at).toBe(end);
    expect(rolled.rolled.expires_at).toBe(end);
    clock.advance(2 * HOUR - 1);
    expect(await works(h, json(made).key)).toBe(true);
    expect(await works(h, rolled.key)).toBe(true);
    clock.advance(1);
    expect(await works(h, json(made).key)).toBe(false);
    expect(await works(h, rolled.key)).toBe(false);
  });

  it('a rotated webhook signs with both secrets during the overlap, then with the new one only, and the old secret is erased', async () => {
    // Real time at first: the reference library checks the timestamp against the system clock.
    const clock = new FakeClock(Date.now());
    receiver = await startReceiver();
    const h = await openStoreHarness(kind, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' }, clock, { webhookCa: receiver.ca });
    const a = await newAccount(h);
    const created = json(await call(h, a.key, 'POST', '/api/webhooks', { url: receiver.url, events: ['bulk.completed'] })).result;
    const oldSecret: string = created.signing_secret;
    const sealedBefore = (await h.engine.deps.store.webhooks.sealedSecrets(created.id))!.secret!;

    const tech = await addKey(h, a.id, 'tech');
    expect((await call(h, tech.key, 'POST', `/api/webhooks/${created.id}/rotate-secret`, {})).statusCode).toBe(403);
    const rotated = await call(h, a.key, 'POST', `/api/webhooks/${created.id}/rotate-secret`, { overlap_seconds: 3600 });
    expect(rotated.statusCode, rotated.body).toBe(200);
    const { signing_secret: newSecret, previous_secret_valid_until: until } = json(rotated).result;
    expect(newSecret).not.toBe(oldSecret);
    expect(until).toBe(new Date(clock.now() + HOUR).toISOString());
    const shown = json(await call(h, a.key, 'GET', `/api/webhooks/${created.id}`)).result;
    expect(shown).toMatchObject({ signing_secret: newSecret, previous_secret_valid_until: until });
    // The data key the old secret was sealed under is gone: its copies in the database open no more.
    expect(await h.engine.webhooks.store['sealer'].unseal(sealedBefore)).toBeUndefined();

    const test = async () => {
      expect((await call(h, a.key, 'POST', '/api/webhooks/test', { id: created.id })).statusCode).toBe(200);
      return receiver!.requests.at(-1)!;
    };
    const during = await test();
    expect(during.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    expect(during.headers['x-sluice-signature']!.split(' ')).toHaveLength(2);
    expect(signedWith(during, newSecret)).toEqual({ legacy: true, standard: true });
    expect(signedWith(during, oldSecret)).toEqual({ legacy: true, standard: true });
    expect(libraryAccepts(during, newSecret)).toBe(true);
    expect(libraryAccepts(during, oldSecret)).toBe(true);
    expect(libraryAccepts(during, 'whsec_' + Buffer.alloc(24, 1).toString('base64'))).toBe(false);

    clock.advance(HOUR);
    await h.deps.keys.forgetExpiredSeals(clock.now());
    const after = await test();
    expect(after.headers['webhook-signature']!.split(' ')).toHaveLength(1);
    expect(signedWith(after, newSecret)).toEqual({ legacy: true, standard: true });
    expect(signedWith(after, oldSecret)).toEqual({ legacy: false, standard: false });
    expect(json(await call(h, a.key, 'GET', `/api/webhooks/${created.id}`)).result).not.toHaveProperty('previous_secret_valid_until');
    // The overlap's copy of the old secret is erased by the sweep at its end.
    const previous = (await h.engine.deps.store.webhooks.sealedSecrets(created.id))!.previous!;
    expect(await h.engine.webhooks.store['sealer'].unseal(previous)).toBeUndefined();
  });

  it('overlap 0 stops the old secret at once; a Telegram webhook has no secret to rotate', async () => {
    receiver = await startReceiver();
    const h = await openStoreHarness(kind, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' }, undefined, { webhookCa: receiver.ca });
    const a = await newAccount(h);
    const created = json(await call(h, a.key, 'POST', '/api/webhooks', { url: receiver.url })).result;
    const rotated = json(await call(h, a.key, 'POST', `/api/webhooks/${created.id}/rotate-secret`, { overlap_seconds: 0 })).result;
    expect(rotated.previous_secret_valid_until).toBeNull();
    await call(h, a.key, 'POST', '/api/webhooks/test', { id: created.id });
    const sent = receiver.requests.at(-1)!;
    expect(signedWith(sent, rotated.signing_secret)).toEqual({ legacy: true, standard: true });
    expect(signedWith(sent, created.signing_secret)).toEqual({ legacy: false, standard: false });

    const chat = json(await call(h, a.key, 'POST', '/api/webhooks', { kind: 'telegram', telegram_chat_id: '42', telegram_bot_token: '123:abc' })).result;
    const refused = await call(h, a.key, 'POST', `/api/webhooks/${chat.id}/rotate-secret`);
    expect(refused.statusCode, refused.body).toBe(409);
    expect(json(refused).result.code).toBe('invalid_state');
  });
});
