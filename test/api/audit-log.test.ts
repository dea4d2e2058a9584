import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { accountsCommand } from '../../src/cli/accounts-command.js';
import { keysCommand } from '../../src/cli/keys-command.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness, type TestAccount } from '../support/api-harness.js';
import { captureIo } from '../support/capture-io.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';

const drops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await closeHarnesses();
  await Promise.all(drops.splice(0).map((drop) => drop()));
});

interface Entry {
  id: number;
  at: string;
  action: string;
  actor: { type: string; id?: string; name?: string };
  target_id: string | null;
  source_ip: string | null;
  user_agent: string | null;
}

const UA = { 'user-agent': 'audit-test/1.0' };

function login(h: ApiHarness, email: string, password: string): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password }, headers: UA, remoteAddress: '127.0.0.9' });
}

function sessionKey(h: ApiHarness, token: string): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: 'POST', url: '/api/keys', headers: { ...bearer(token), ...UA }, remoteAddress: '127.0.0.9', payload: { name: 'from session' } });
}

function logout(h: ApiHarness, token?: string): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: 'POST', url: '/api/auth/logout', headers: token === undefined ? UA : { ...bearer(token), ...UA }, remoteAddress: '127.0.0.9' });
}

/** Every entry the account's admin key can read, newest first, through the API's pages. */
async function allEntries(h: ApiHarness, key: string, limit = 100): Promise<Entry[]> {
  const all: Entry[] = [];
  let before: number | null = null;
  do {
    const r = await h.app.inject({ method: 'GET', url: `/api/account/audit?limit=${limit}${before === null ? '' : `&before=${before}`}`, headers: bearer(key) });
    expect(r.statusCode).toBe(200);
    const body = json(r) as { entries: Entry[]; next_before: number | null };
    all.push(...body.entries);
    before = body.next_before;
  } while (before !== null);
  return all;
}

describe.each(TEST_STORES)('audit log on %s', (store) => {
  async function harness(): Promise<ApiHarness> {
    const placed = await storeEnv(store);
    drops.push(placed.drop);
    return openApiHarness(placed.env);
  }

  it('records each key, webhook, login and session action once, with its actor, target and source, and no secret', async () => {
    const h = await harness();
    const a: TestAccount = await newAccount(h);
    const admin = { type: 'key', id: a.keyId, name: 'first' };
    const call = (method: 'POST' | 'PATCH' | 'GET' | 'PUT' | 'DELETE', url: string, payload?: object) =>
      h.app.inject({ method, url, headers: { ...bearer(a.key), ...UA }, remoteAddress: '127.0.0.7', ...(payload ? { payload } : {}) });

    const made = json(await call('POST', '/api/account/keys', { name: 'ci', role: 'tech' }));
    expect((await call('PATCH', `/api/account/keys?id=${made.id}&action=disable`)).statusCode).toBe(200);
    expect((await call('PATCH', `/api/account/keys?id=${made.id}&action=enable`)).statusCode).toBe(200);
    expect((await call('GET', `/api/account/keys/reveal?id=${made.id}`)).statusCode).toBe(200);
    const hook = json(await call('POST', '/api/webhooks', { kind: 'telegram', telegram_chat_id: '-100200', telegram_bot_token: '123:secret-token' })).result;
    expect((await call('PUT', '/api/webhooks', { id: hook.id, description: 'changed' })).statusCode).toBe(200);
    expect((await call('DELETE', `/api/webhooks/${hook.id}`)).statusCode).toBe(200);
    // Refused actions change nothing and record nothing.
    expect((await call('PATCH', `/api/account/keys?id=${a.keyId}&action=bogus`)).statusCode).toBe(400);

    expect((await login(h, a.email, 'wrong password')).statusCode).toBe(401);
    expect((await login(h, 'nobody-at-all@example.com', a.password)).statusCode).toBe(401);
    const token = json(await login(h, a.email, a.password)).token as string;
    const fromSession = json(await sessionKey(h, token));
    expect((await logout(h, token)).statusCode).toBe(200);
    expect((await logout(h, token)).statusCode).toBe(200);

    expect(await keysCommand(h.engine, ['revoke', made.id], captureIo().io)).toBe(0);
    expect(await accountsCommand(h.engine, ['suspend', a.id], captureIo().io)).toBe(0);
    expect(await accountsCommand(h.engine, ['reinstate', a.id], captureIo().io)).toBe(0);

    const entries = (await allEntries(h, a.key, 3)).reverse();
    const api = { source_ip: '127.0.0.7', user_agent: 'audit-test/1.0' };
    const web = { source_ip: '127.0.0.9', user_agent: 'audit-test/1.0' };
    const none = { source_ip: null, user_agent: null };
    expect(entries.map(({ action, actor, target_id, source_ip, user_agent }) => ({ action, actor, target_id, source_ip, user_agent }))).toEqual([
      { action: 'key.created', actor: admin, target_id: made.id, ...api },
      { action: 'key.disabled', actor: admin, target_id: made.id, ...api },
      { action: 'key.enabled', actor: admin, target_id: made.id, ...api },
      { action: 'key.revealed', actor: admin, target_id: made.id, ...api },
      { action: 'webhook.created', actor: admin, target_id: hook.id, ...api },
      { action: 'webhook.updated', actor: admin, target_id: hook.id, ...api },
      { action: 'webhook.deleted', actor: admin, target_id: hook.id, ...api },
      { action: 'login.failed', actor: { type: 'login' }, target_id: null, ...web },
      { action: 'login.succeeded', actor: { type: 'login' }, target_id: null, ...web },
      { action: 'key.created', actor: { type: 'session' }, target_id: fromSession.id, ...web },
      // The second logout ended nothing, and records nothing.
      { action: 'session.ended', actor: { type: 'session' }, target_id: null, ...web },
      { action: 'key.revoked', actor: { type: 'cli' }, target_id: made.id, ...none },
      { action: 'account.suspended', actor: { type: 'cli' }, target_id: a.id, ...none },
      { action: 'account.reinstated', actor: { type: 'cli' }, target_id: a.id, ...none },
    ]);
    for (const e of entries) expect(Number.isNaN(Date.parse(e.at))).toBe(false);
    const text = JSON.stringify(entries);
    for (const secret of [a.key, made.key, fromSession.key, token, a.password, 'wrong password', '123:secret-token']) expect(text).not.toContain(secret);
  });

  it('is for admin keys only, and an admin sees only its own account’s entries', async () => {
    const h = await harness();
    const a = await newAccount(h);
    const b = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech');
    const readonly = await addKey(h, a.id, 'readonly');
    await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(b.key), payload: { name: 'b only' } });
    await login(h, b.email, 'wrong password');

    for (const key of [tech.key, readonly.key]) {
      const r = await h.app.inject({ method: 'GET', url: '/api/account/audit', headers: bearer(key) });
      expect(r.statusCode).toBe(403);
      expect(json(r).code).toBe('forbidden');
    }
    expect((await h.app.inject({ method: 'GET', url: '/api/account/audit' })).statusCode).toBe(401);
    expect(await allEntries(h, a.key)).toEqual([]);
    expect((await allEntries(h, b.key)).map((e) => e.action)).toEqual(['login.failed', 'key.created']);
  });

  it('refuses a bad page with 422', async () => {
    const h = await harness();
    const a = await newAccount(h);
    for (const query of ['limit=0', 'limit=101', 'before=0', 'before=x']) {
      expect((await h.app.inject({ method: 'GET', url: `/api/account/audit?${query}`, headers: bearer(a.key) })).statusCode).toBe(422);
    }
  });
});

describe.each(TEST_STORES)('sessions on %s', (store) => {
  async function harness(): Promise<ApiHarness> {
    const placed = await storeEnv(store);
    drops.push(placed.drop);
    return openApiHarness(placed.env);
  }

  it('a session from before a suspension no longer makes keys after reinstatement; a new login does', async () => {
    const h = await harness();
    const a = await newAccount(h);
    const other = await newAccount(h);
    const token = json(await login(h, a.email, a.password)).token as string;
    const otherToken = json(await login(h, other.email, other.password)).token as string;
    expect((await sessionKey(h, token)).statusCode).toBe(200);

    expect(await accountsCommand(h.engine, ['suspend', a.id], captureIo().io)).toBe(0);
    expect((await sessionKey(h, token)).statusCode).toBe(401);
    expect(await accountsCommand(h.engine, ['reinstate', a.id], captureIo().io)).toBe(0);
    expect((await sessionKey(h, token)).statusCode).toBe(401);

    const fresh = json(await login(h, a.email, a.password)).token as string;
    expect((await sessionKey(h, fresh)).statusCode).toBe(200);
    // Another account's session is untouched.
    expect((await sessionKey(h, otherToken)).statusCode).toBe(200);
  });

  it('logout makes the token useless at once, answers the same when repeated or unknown, and ends no other session', async () => {
    const h = await harness();
    const a = await newAccount(h);
    const token = json(await login(h, a.email, a.password)).token as string;
    const second = json(await login(h, a.email, a.password)).token as string;

    const out = await logout(h, token);
    expect(out.statusCode).toBe(200);
    expect(json(out)).toEqual({ message: 'Logged out' });
    expect((await sessionKey(h, token)).statusCode).toBe(401);
    const again = await logout(h, token);
    expect(again.statusCode).toBe(200);
    expect(again.body).toBe(out.body);
    expect((await logout(h, 'sess_never_issued')).body).toBe(out.body);
    expect((await logout(h)).statusCode).toBe(401);
    expect((await sessionKey(h, second)).statusCode).toBe(200);
  });
});
