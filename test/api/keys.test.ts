import { createHash } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import type { CliIo } from '../../src/cli/cli-io.js';
import { keysCommand } from '../../src/cli/keys-command.js';
import { FakeClock } from '../../src/shared/clock.js';
import {
  addKey,
  bearer,
  closeHarnesses,
  expectNoLeak,
  json,
  listen,
  newAccount,
  openApiHarness,
  type ApiHarness,
} from '../support/api-harness.js';

afterEach(closeHarnesses);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SECRET = /^sluice_[A-Za-z0-9]{20,}$/;
const UNAUTHORIZED = { error: 'Unauthorized' };

async function login(h: ApiHarness, email: string, password: string) {
  return h.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password } });
}

/** Any cheap authenticated request: what "the key works" means below. */
async function use(h: ApiHarness, key: string) {
  return h.app.inject({ method: 'GET', url: '/api/jobs', headers: bearer(key) });
}

function cliIo(): { io: CliIo; out: () => string } {
  let out = '';
  const sink = { write: (text: string) => ((out += text), true) } as unknown as NodeJS.WriteStream;
  return { io: { stdout: sink, stderr: sink }, out: () => out };
}

describe('login', () => {
  it('gives a session token with an expiry and the user, for the right password in any letter case', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { email: 'maria.rossi@example.com', password: 'pa55word-long' });

    const response = await login(h, 'Maria.Rossi@Example.com', 'pa55word-long');
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.user).toEqual({ id: a.id, email: 'maria.rossi@example.com' });
    expect(typeof body.token).toBe('string');
    expect(body.token.length).toBeGreaterThanOrEqual(32);
    expect(Date.parse(body.expires_at)).toBeGreaterThan(Date.now());
    // The session is for POST /api/keys only; it is not an API key.
    expect((await use(h, body.token)).statusCode).toBe(401);
  });

  it('refuses a wrong password and an unknown email with 401 and the same body, so emails cannot be probed', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { password: 'right-password' });
    const wrong = await login(h, a.email, 'wrong-password');
    const unknown = await login(h, 'nobody@example.com', 'right-password');
    const noPassword = await newAccount(h, { password: null });
    const passwordless = await login(h, noPassword.email, '');

    for (const r of [wrong, unknown, passwordless]) {
      expect(r.statusCode).toBe(401);
      expect(Object.keys(json(r))).toEqual(['error']);
      expectNoLeak(r.body);
    }
    expect(unknown.body).toBe(wrong.body);
    expect(passwordless.body).toBe(wrong.body);
  });

  it('answers a failed login with the standard 401 body {error: "Unauthorized"} (spec 5.7)', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { password: 'right-password' });
    expect(json(await login(h, a.email, 'wrong-password'))).toEqual(UNAUTHORIZED);
    expect(json(await login(h, 'nobody@example.com', 'x'))).toEqual(UNAUTHORIZED);
  });
});

describe('creating keys', () => {
  it('with the session token: POST /api/keys returns key, name and created_at, and the key works at once', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const token = json(await login(h, a.email, a.password)).token;

    const response = await h.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload: { name: 'ci pipeline' } });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ name: 'ci pipeline' });
    expect(body.key).toMatch(SECRET);
    expect(new Date(body.created_at).toISOString()).toBe(body.created_at);
    expect((await use(h, body.key)).statusCode).toBe(200);
    // The key belongs to the session's account.
    expect(await h.deps.keys.check(body.key)).toMatchObject({ ok: true, key: { accountId: a.id } });
  });

  it('refuses an expired session token', async () => {
    const clock = new FakeClock(Date.now());
    const h = await openApiHarness({ SLUICE_SESSION_TTL_SECONDS: '60' }, clock);
    const a = await newAccount(h);
    const token = json(await login(h, a.email, a.password)).token;
    clock.advance(61_000);
    const response = await h.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload: { name: 'late' } });
    expect(response.statusCode).toBe(401);
    expect(json(response)).toEqual(UNAUTHORIZED);
  });

  it('with an API key: POST /api/account/keys returns id, name, key, key_prefix and is_active', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);

    const response = await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(a.key), payload: { name: 'second' } });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body).toMatchObject({ name: 'second', is_active: true });
    expect(body.id).toMatch(UUID);
    expect(body.key).toMatch(SECRET);
    expect(body.key.startsWith(body.key_prefix)).toBe(true);
    expect(body.key_prefix.startsWith('sluice_')).toBe(true);
    expect(body.key_prefix.length).toBeLessThan(body.key.length - 16);
    expect((await use(h, body.key)).statusCode).toBe(200);
  });

  it('stores only a hash of the secret', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    // Every stored column of the key, as the store holds it.
    const row = (await h.engine.deps.store.keys.byId(a.keyId))!;
    expect(JSON.stringify(row)).not.toContain(a.key);
    expect(JSON.stringify(row)).not.toContain(a.key.slice('sluice_'.length));
    expect(row.keyHash).toBe(createHash('sha256').update(a.key).digest('hex'));
  });

  it('lets roles create only keys of their own standing', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech');
    const readonly = await addKey(h, a.id, 'readonly');

    const techAdmin = await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(tech.key), payload: { name: 'x', role: 'admin' } });
    expect(techAdmin.statusCode).toBe(403);
    expect(json(techAdmin).error).toBe('Insufficient permissions');
    const techTech = await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(tech.key), payload: { name: 'x' } });
    expect(techTech.statusCode).toBe(200);
    expect((await h.deps.keys.get(json(techTech).id))!.role).toBe('tech');
    const fromReadonly = await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(readonly.key), payload: { name: 'x', role: 'readonly' } });
    expect(fromReadonly.statusCode).toBe(403);
  });
});

describe('listing keys', () => {
  it('shows every key of the account with its prefix and state, and never a secret', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const second = await addKey(h, a.id, 'tech', 'second');
    const created = json(await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(a.key), payload: { name: 'third' } }));

    const response = await h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(a.key) });
    expect(response.statusCode).toBe(200);
    const body = json(response);
    expect(body.keys.map((k: { id: string }) => k.id).sort()).toEqual([a.keyId, second.keyId, created.id].sort());
    for (const k of body.keys) {
      expect(k).not.toHaveProperty('key');
      expect(k).not.toHaveProperty('secret');
      expect(k).toMatchObject({ is_active: true });
      expect(typeof k.key_prefix).toBe('string');
      expect(typeof k.name).toBe('string');
    }
    for (const secret of [a.key, second.key, created.key]) {
      expect(response.body).not.toContain(secret);
      expect(response.body).not.toContain(secret.slice(14));
    }
    expect(response.body).not.toMatch(/sluice_[A-Za-z0-9]{20,}/);
  });
});

describe('disabling, enabling and revoking', () => {
  it('a disabled key is refused on its very next request over a kept-alive socket, and works again once enabled', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const victim = await addKey(h, a.id, 'admin', 'victim');
    const base = await listen(h);
    const get = (key: string) => fetch(`${base}/api/jobs`, { headers: bearer(key) });

    expect((await get(victim.key)).status).toBe(200);
    const disable = await fetch(`${base}/api/account/keys?id=${victim.keyId}&action=disable`, { method: 'PATCH', headers: bearer(a.key) });
    expect(disable.status).toBe(200);
    expect(await disable.json()).toEqual({ message: 'API key disabled' });

    const refused = await get(victim.key);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual(UNAUTHORIZED);
    const keys = json(await h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(a.key) })).keys;
    expect(keys.find((k: { id: string }) => k.id === victim.keyId)).toMatchObject({ is_active: false });

    const enable = await fetch(`${base}/api/account/keys?id=${victim.keyId}&action=enable`, { method: 'PATCH', headers: bearer(a.key) });
    expect(enable.status).toBe(200);
    expect(typeof ((await enable.json()) as { message?: unknown }).message).toBe('string');
    expect((await get(victim.key)).status).toBe(200);
  });

  it('a disabled key gets "bad key" on the gender endpoint', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const victim = await addKey(h, a.id);
    await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${victim.keyId}&action=disable`, headers: bearer(a.key) });
    const r = await h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(victim.key), payload: { email: 'maria@example.com' } });
    expect(r.statusCode).toBe(401);
    expect(json(r)).toEqual({ error: 'bad key' });
  });

  it('needs a non-readonly role to disable; tech may, on keys of its own standing or below; only admin enables', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const readonly = await addKey(h, a.id, 'readonly');
    const tech = await addKey(h, a.id, 'tech');
    const target = await addKey(h, a.id, 'tech', 'target');

    const refused = await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${target.keyId}&action=disable`, headers: bearer(readonly.key) });
    expect(refused.statusCode).toBe(403);
    expect(json(refused).error).toBe('Insufficient permissions');
    expect((await use(h, target.key)).statusCode).toBe(200);

    for (const victim of [target, readonly]) {
      const byTech = await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${victim.keyId}&action=disable`, headers: bearer(tech.key) });
      expect(byTech.statusCode).toBe(200);
      expect((await use(h, victim.key)).statusCode).toBe(401);
      // Issue 27, finding 4: enabling undoes a leak's containment, so only an admin key enables.
      const back = await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${victim.keyId}&action=enable`, headers: bearer(tech.key) });
      expect(back.statusCode).toBe(403);
      const byAdmin = await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${victim.keyId}&action=enable`, headers: bearer(a.key) });
      expect(byAdmin.statusCode).toBe(200);
      expect((await use(h, victim.key)).statusCode).toBe(200);
    }
  });

  it('a tech key can neither disable an admin key nor re-enable one an admin disabled (issue 16, item 1)', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech');
    const leaked = await addKey(h, a.id, 'admin', 'leaked');
    const patch = (key: string, id: string, action: string) => h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${id}&action=${action}`, headers: bearer(key) });

    const disable = await patch(tech.key, a.keyId, 'disable');
    expect(disable.statusCode).toBe(403);
    expect(json(disable)).toEqual({ error: 'Insufficient permissions', code: 'forbidden' });
    expect((await use(h, a.key)).statusCode).toBe(200);

    // The admin disables a key after a leak; the tech key may not bring it back.
    expect((await patch(a.key, leaked.keyId, 'disable')).statusCode).toBe(200);
    const enable = await patch(tech.key, leaked.keyId, 'enable');
    expect(enable.statusCode).toBe(403);
    expect(json(enable)).toEqual({ error: 'Insufficient permissions', code: 'forbidden' });
    expect((await use(h, leaked.key)).statusCode).toBe(401);
    expect((await h.deps.keys.get(leaked.keyId))!.isActive).toBe(false);

    // An admin still acts on every role, a tech key on itself.
    expect((await patch(a.key, tech.keyId, 'disable')).statusCode).toBe(200);
    expect((await patch(a.key, tech.keyId, 'enable')).statusCode).toBe(200);
    expect((await patch(tech.key, tech.keyId, 'disable')).statusCode).toBe(200);
    expect((await use(h, tech.key)).statusCode).toBe(401);
  });

  it('a key revoked by the operator CLI is refused at once by the running server, and cannot be enabled again', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const victim = await addKey(h, a.id);
    expect((await use(h, victim.key)).statusCode).toBe(200);

    // The CLI builds its own key store over the same database, as another process would.
    const { io, out } = cliIo();
    expect(await keysCommand(h.engine, ['revoke', victim.keyId], io)).toBe(0);
    expect(out()).toContain('revoked');

    const refused = await use(h, victim.key);
    expect(refused.statusCode).toBe(401);
    expect(json(refused)).toEqual(UNAUTHORIZED);

    const enable = await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${victim.keyId}&action=enable`, headers: bearer(a.key) });
    expect(enable.statusCode).toBeGreaterThanOrEqual(400);
    expect(enable.statusCode).toBeLessThan(500);
    expectNoLeak(enable.body);
    expect((await use(h, victim.key)).statusCode).toBe(401);
    const listed = json(await h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(a.key) })).keys;
    expect(listed.find((k: { id: string }) => k.id === victim.keyId)).toMatchObject({ is_active: false });
  });

  it('keys.revoke in the store is seen on the next request as well', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    expect(await h.deps.keys.revoke(a.keyId, Date.now())).toBe(true);
    expect(json(await use(h, a.key))).toEqual(UNAUTHORIZED);
  });
});

describe('revealing a key', () => {
  it('is for an admin key, or for the key itself: a tech key cannot read an admin\'s (or another tech key\'s) secret (issue 16, item 1)', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const freshAdmin = await addKey(h, a.id, 'admin', 'fresh admin');
    const tech = await addKey(h, a.id, 'tech');
    const otherTech = await addKey(h, a.id, 'tech', 'other tech');
    const readonly = await addKey(h, a.id, 'readonly');
    const reveal = (key: string, id: string) => h.app.inject({ method: 'GET', url: `/api/account/keys/reveal?id=${id}`, headers: bearer(key) });

    for (const target of [freshAdmin, a, otherTech, readonly]) {
      const refused = await reveal(tech.key, target.keyId);
      expect({ target: target.keyId, status: refused.statusCode }).toEqual({ target: target.keyId, status: 403 });
      expect(json(refused)).toEqual({ error: 'Insufficient permissions', code: 'forbidden' });
      expect(refused.headers['cache-control']).toBe('no-store');
      expect(refused.body).not.toMatch(/sluice_[A-Za-z0-9]{20,}/);
    }

    const own = await reveal(tech.key, tech.keyId);
    expect(own.statusCode).toBe(200);
    expect(json(own)).toEqual({ key: tech.key });
    for (const target of [freshAdmin, otherTech, readonly]) {
      expect(json(await reveal(a.key, target.keyId))).toEqual({ key: target.key });
    }
  });

  it('shows the full key with Cache-Control: no-store inside the window, and 410 after it, for good', async () => {
    const clock = new FakeClock(Date.now());
    const h = await openApiHarness({ SLUICE_KEY_REVEAL_SECONDS: '900' }, clock);
    const a = await newAccount(h);
    const target = await addKey(h, a.id, 'tech', 'to reveal');
    const reveal = () => h.app.inject({ method: 'GET', url: `/api/account/keys/reveal?id=${target.keyId}`, headers: bearer(a.key) });

    clock.advance(899_000);
    const shown = await reveal();
    expect(shown.statusCode).toBe(200);
    expect(json(shown)).toEqual({ key: target.key });
    expect(shown.headers['cache-control']).toBe('no-store');

    clock.advance(2_000);
    const gone = await reveal();
    expect(gone.statusCode).toBe(410);
    expect(json(gone).error).toBe('API key can no longer be shown');
    expect(gone.body).not.toContain(target.key);

    // Even if the clock stepped back, the sealed copy is gone.
    clock.advance(-10_000);
    expect((await reveal()).statusCode).toBe(410);
  });

  it('is 410 at once when the reveal window is zero', async () => {
    const h = await openApiHarness({ SLUICE_KEY_REVEAL_SECONDS: '0' });
    const a = await newAccount(h);
    await new Promise((r) => setTimeout(r, 5));
    const r = await h.app.inject({ method: 'GET', url: `/api/account/keys/reveal?id=${a.keyId}`, headers: bearer(a.key) });
    expect(r.statusCode).toBe(410);
    expect(r.headers['cache-control']).toBe('no-store');
  });

  it('is 410 for a revoked key, 403 for a readonly caller, 404 for another account\'s key, 400 for a missing or non-UUID id', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const b = await newAccount(h);
    const readonly = await addKey(h, a.id, 'readonly');
    const revoked = await addKey(h, a.id);
    await h.deps.keys.revoke(revoked.keyId, Date.now());
    const reveal = (key: string, query: string) => h.app.inject({ method: 'GET', url: `/api/account/keys/reveal${query}`, headers: bearer(key) });

    const cases: [string, string, number][] = [
      [a.key, `?id=${revoked.keyId}`, 410],
      [readonly.key, `?id=${readonly.keyId}`, 403],
      [readonly.key, `?id=${a.keyId}`, 403],
      [b.key, `?id=${a.keyId}`, 404],
      [a.key, '', 400],
      [a.key, '?id=', 400],
      [a.key, '?id=not-a-uuid', 400],
      [a.key, `?id=${a.keyId}x`, 400],
    ];
    for (const [key, query, status] of cases) {
      const r = await reveal(key, query);
      expect({ query, status: r.statusCode }).toEqual({ query, status });
      expect(r.headers['cache-control']).toBe('no-store');
      expect(r.body).not.toMatch(/sluice_[A-Za-z0-9]{20,}/);
      expectNoLeak(r.body);
    }
    expect(json(await reveal(readonly.key, `?id=${a.keyId}`)).error).toBe('Insufficient permissions');
    expect(json(await reveal(b.key, `?id=${a.keyId}`)).error).toBe('API key not found');
  });
});

describe('suspension and isolation', () => {
  it('a suspended account loses every key, its sessions and its logins', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const second = await addKey(h, a.id, 'readonly');
    const token = json(await login(h, a.email, a.password)).token;
    const other = await newAccount(h);

    await h.engine.deps.billing.setStatus(a.id, 'suspended');

    for (const key of [a.key, second.key]) {
      expect(json(await use(h, key))).toEqual(UNAUTHORIZED);
      const gender = await h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(key), payload: { email: 'maria@example.com' } });
      expect(gender.statusCode).toBe(401);
      expect(json(gender)).toEqual({ error: 'Unauthorized' });
      expect((await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(key), payload: { name: 'x' } })).statusCode).toBe(401);
    }
    expect((await h.app.inject({ method: 'POST', url: '/api/keys', headers: bearer(token), payload: { name: 'x' } })).statusCode).toBe(401);
    expect((await login(h, a.email, a.password)).statusCode).toBe(401);
    // Nobody else is affected.
    expect((await use(h, other.key)).statusCode).toBe(200);
  });

  it('an account sees and changes only its own keys', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const b = await newAccount(h);

    const listB = json(await h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(b.key) }));
    expect(listB.keys.map((k: { id: string }) => k.id)).toEqual([b.keyId]);

    for (const action of ['disable', 'enable']) {
      const r = await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${a.keyId}&action=${action}`, headers: bearer(b.key) });
      expect(r.statusCode).toBe(404);
      expect(json(r).error).toBe('API key not found');
    }
    expect((await use(h, a.key)).statusCode).toBe(200);
    const created = json(await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(b.key), payload: { name: 'b2' } }));
    expect((await h.deps.keys.get(created.id))!.accountId).toBe(b.id);
    const listA = json(await h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(a.key) }));
    expect(listA.keys.map((k: { id: string }) => k.id)).toEqual([a.keyId]);
  });
});
