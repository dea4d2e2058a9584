import { afterEach, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/webhooks/address-policy.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';

/** Names the tests use, resolved without DNS: a public address, or one that is not. */
const NAMES: Record<string, string[]> = {
  'hooks.example.com': ['93.184.215.14'],
  'hooks2.example.com': ['2606:2800:21f:cb07:6820:80da:af6b:8b2c'],
  'internal.example.com': ['10.1.2.3'],
  'split.example.com': ['93.184.215.14', '127.0.0.1'],
};
const resolve: Resolver = async (hostname) => {
  const found = NAMES[hostname];
  if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return found.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const);
};

async function harness(): Promise<ApiHarness> {
  return openApiHarness({}, undefined, { resolve });
}

function call(h: ApiHarness, key: string, method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, payload?: unknown) {
  return h.app.inject({ method, url, headers: bearer(key), ...(payload === undefined ? {} : { payload: payload as object }) });
}

async function createHook(h: ApiHarness, key: string, body: Record<string, unknown> = {}) {
  const response = await call(h, key, 'POST', '/api/webhooks', { url: 'https://hooks.example.com/sluice', events: ['bulk.completed'], ...body });
  expect(response.statusCode, response.body).toBe(200);
  return json(response).result;
}

afterEach(closeHarnesses);

describe('webhook management', () => {
  it('creates a generic webhook and returns its signing secret once, never in the list', async () => {
    const h = await harness();
    const account = await newAccount(h);
    const response = await call(h, account.key, 'POST', '/api/webhooks', { url: 'https://hooks.example.com/x', events: ['bulk.completed', 'lookup.completed'], description: 'ops' });
    const body = json(response);
    expect(response.statusCode).toBe(200);
    expect(body.success).toBe(true);
    expect(body.result).toMatchObject({ url: 'https://hooks.example.com/x', events: ['bulk.completed', 'lookup.completed'], description: 'ops', is_active: true, kind: 'generic' });
    expect(body.result.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);

    const list = json(await call(h, account.key, 'GET', '/api/webhooks'));
    expect(list).toMatchObject({ success: true, total: 1 });
    expect(list.result[0].id).toBe(body.result.id);
    expect(JSON.stringify(list)).not.toContain(body.result.signing_secret);
    expect(list.result[0]).not.toHaveProperty('signing_secret');
  });

  it('shows the signing secret again to an admin through GET /api/webhooks/{id}, and to nobody else', async () => {
    const h = await harness();
    const account = await newAccount(h);
    const hook = await createHook(h, account.key);
    const admin = json(await call(h, account.key, 'GET', `/api/webhooks/${hook.id}`));
    expect(admin.result.signing_secret).toBe(hook.signing_secret);
    for (const role of ['tech', 'readonly'] as const) {
      const other = json(await call(h, (await addKey(h, account.id, role)).key, 'GET', `/api/webhooks/${hook.id}`));
      expect(other.result.id).toBe(hook.id);
      expect(other.result).not.toHaveProperty('signing_secret');
    }
  });

  it('defaults events to bulk.completed and refuses unknown events, kinds and field types with 422', async () => {
    const h = await harness();
    const { key } = await newAccount(h);
    const created = json(await call(h, key, 'POST', '/api/webhooks', { url: 'https://hooks.example.com/a' }));
    expect(created.result.events).toEqual(['bulk.completed']);
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ url: 'https://hooks.example.com/a', events: ['job.exploded'] }, 'events'],
      [{ url: 'https://hooks.example.com/a', events: [] }, 'events'],
      [{ url: 'https://hooks.example.com/a', kind: 'slack' }, 'kind'],
      [{ url: 'https://hooks.example.com/a', is_active: 'yes' }, 'is_active'],
      [{ url: 42 }, 'url'],
    ];
    for (const [payload, field] of cases) {
      const response = await call(h, key, 'POST', '/api/webhooks', payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(422);
      expect(json(response)).toMatchObject({ success: false, result: { code: 'invalid_request' } });
      expect(json(response).message).toContain(field);
    }
  });

  it('updates with PUT (admin only) and answers result.status updated', async () => {
    const h = await harness();
    const account = await newAccount(h);
    const hook = await createHook(h, account.key);
    const tech = (await addKey(h, account.id, 'tech')).key;
    const denied = await call(h, tech, 'PUT', '/api/webhooks', { id: hook.id, url: 'https://hooks2.example.com/b' });
    expect(denied.statusCode).toBe(403);
    expect(json(denied)).toMatchObject({ success: false, result: { code: 'forbidden' } });

    const response = await call(h, account.key, 'PUT', '/api/webhooks', { id: hook.id, url: 'https://hooks2.example.com/b', is_active: false, description: 'paused' });
    expect(response.statusCode).toBe(200);
    expect(json(response)).toMatchObject({ success: true, result: { status: 'updated', webhook: { url: 'https://hooks2.example.com/b', is_active: false, description: 'paused' } } });
    const missingUrl = await call(h, account.key, 'PUT', '/api/webhooks', { id: hook.id });
    expect(missingUrl.statusCode).toBe(400);
    expect(json(missingUrl).result.code).toBe('bad_request');
  });

  it('deletes by path or by the older body id; a second delete and the deliveries list are then 404', async () => {
    const h = await harness();
    const account = await newAccount(h);
    const first = await createHook(h, account.key);
    const second = await createHook(h, account.key);

    const byPath = await call(h, account.key, 'DELETE', `/api/webhooks/${first.id}`);
    expect(byPath.statusCode).toBe(200);
    expect(json(byPath)).toMatchObject({ success: true, result: { status: 'deleted' } });
    const again = await call(h, account.key, 'DELETE', `/api/webhooks/${first.id}`);
    expect(again.statusCode).toBe(404);
    expect(json(again)).toMatchObject({ success: false, result: { code: 'not_found' } });
    const history = await call(h, account.key, 'GET', `/api/webhooks/deliveries?webhook_id=${first.id}`);
    expect(history.statusCode).toBe(404);

    const byBody = await call(h, account.key, 'DELETE', '/api/webhooks', { id: second.id });
    expect(json(byBody).result.status).toBe('deleted');
    expect(json(await call(h, account.key, 'GET', '/api/webhooks')).total).toBe(0);
    const noId = await call(h, account.key, 'DELETE', '/api/webhooks', {});
    expect(noId.statusCode).toBe(400);
    expect(json(noId)).toMatchObject({ success: false, result: { code: 'bad_request' } });
  });

  it.each(['tech', 'readonly'] as const)('refuses delete, test and redelivery to a %s key with 403 in the webhook envelope', async (role) => {
    const h = await harness();
    const account = await newAccount(h);
    const hook = await createHook(h, account.key);
    const key = (await addKey(h, account.id, role)).key;
    for (const [method, url, payload] of [
      ['DELETE', `/api/webhooks/${hook.id}`, undefined],
      ['POST', '/api/webhooks/test', { id: hook.id }],
      ['POST', '/api/webhooks/deliveries/00000000-0000-4000-8000-000000000000/redeliver', undefined],
    ] as const) {
      const response = await call(h, key, method, url, payload);
      expect(response.statusCode, url).toBe(403);
      expect(json(response)).toEqual({ success: false, result: { code: 'forbidden' }, message: expect.any(String) });
    }
    expect(json(await call(h, account.key, 'GET', `/api/webhooks/${hook.id}`)).result.id).toBe(hook.id);
  });

  it('lets a readonly key list and read but not create', async () => {
    const h = await harness();
    const account = await newAccount(h);
    await createHook(h, account.key);
    const readonly = (await addKey(h, account.id, 'readonly')).key;
    expect(json(await call(h, readonly, 'GET', '/api/webhooks')).total).toBe(1);
    const create = await call(h, readonly, 'POST', '/api/webhooks', { url: 'https://hooks.example.com/r' });
    expect(create.statusCode).toBe(403);
  });

  it('answers 401, 400 and 404 in the webhook envelope', async () => {
    const h = await harness();
    const account = await newAccount(h);
    const other = await newAccount(h);
    const hook = await createHook(h, other.key);
    const noKey = await h.app.inject({ method: 'GET', url: '/api/webhooks' });
    expect(noKey.statusCode).toBe(401);
    expect(json(noKey)).toEqual({ success: false, result: { code: 'unauthorized' }, message: 'Unauthorized' });
    const malformed = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: { ...bearer(account.key), 'content-type': 'application/json' }, payload: '{"url":' });
    expect(malformed.statusCode).toBe(400);
    expect(json(malformed)).toMatchObject({ success: false, result: { code: 'bad_request' } });
    const missingQuery = await call(h, account.key, 'GET', '/api/webhooks/deliveries');
    expect(json(missingQuery)).toMatchObject({ success: false, result: { code: 'bad_request' } });
    // Another account's webhook does not exist for this one.
    for (const [method, url, payload] of [
      ['GET', `/api/webhooks/${hook.id}`, undefined],
      ['DELETE', `/api/webhooks/${hook.id}`, undefined],
      ['POST', '/api/webhooks/test', { id: hook.id }],
      ['GET', `/api/webhooks/deliveries?webhook_id=${hook.id}`, undefined],
    ] as const) {
      const response = await call(h, account.key, method, url, payload);
      expect(response.statusCode, url).toBe(404);
      expect(json(response).result.code).toBe('not_found');
    }
  });
});

describe('webhook address rules at creation', () => {
  it.each([
    ['http://hooks.example.com/x', 'invalid_url'],
    ['ftp://hooks.example.com/x', 'invalid_url'],
    ['not a url', 'invalid_url'],
    ['https://user:pw@hooks.example.com/x', 'invalid_url'],
    ['https://nowhere.example.com/x', 'invalid_url'],
    ['https://127.0.0.1/x', 'blocked_address'],
    ['https://2130706433/x', 'blocked_address'],
    ['https://0x7f.1/x', 'blocked_address'],
    ['https://0.0.0.0/x', 'blocked_address'],
    ['https://10.0.0.8/x', 'blocked_address'],
    ['https://172.20.1.1/x', 'blocked_address'],
    ['https://192.168.1.1/x', 'blocked_address'],
    ['https://100.64.0.1/x', 'blocked_address'],
    ['https://169.254.169.254/latest/meta-data', 'blocked_address'],
    ['https://[::1]/x', 'blocked_address'],
    ['https://[fe80::1]/x', 'blocked_address'],
    ['https://[fd00::1]/x', 'blocked_address'],
    ['https://[::ffff:127.0.0.1]/x', 'blocked_address'],
    ['https://[::ffff:a9fe:a9fe]/x', 'blocked_address'],
    ['https://[fd00:ec2::254]/x', 'blocked_address'],
    ['https://localhost/x', 'blocked_address'],
    ['https://internal.example.com/x', 'blocked_address'],
    ['https://split.example.com/x', 'blocked_address'],
  ])('refuses %s with 422 %s', async (url, code) => {
    const h = await harness();
    const { key } = await newAccount(h);
    const response = await call(h, key, 'POST', '/api/webhooks', { url });
    expect(response.statusCode).toBe(422);
    expect(json(response)).toMatchObject({ success: false, result: { code } });
    expect(json(response).message.length).toBeGreaterThan(20);
    expect(json(await call(h, key, 'GET', '/api/webhooks')).total).toBe(0);
  });

  it.each([
    ['https://internal.example.com/x', ['10.1.2.3']],
    ['https://split.example.com/x', ['127.0.0.1', '93.184.215.14']],
  ])('refuses %s without telling what the name resolves to', async (url, answers) => {
    const h = await harness();
    const { key } = await newAccount(h);
    const response = await call(h, key, 'POST', '/api/webhooks', { url });
    expect(response.statusCode).toBe(422);
    expect(json(response).result.code).toBe('blocked_address');
    expect(json(response).message).toContain('does not resolve to a public address');
    for (const answer of answers) expect(response.body).not.toContain(answer);
    expect(response.body).not.toMatch(/private|loopback/);
  });

  it('checks the address again when the URL changes', async () => {
    const h = await harness();
    const { key } = await newAccount(h);
    const hook = await createHook(h, key);
    const response = await call(h, key, 'PUT', '/api/webhooks', { id: hook.id, url: 'https://internal.example.com/x' });
    expect(response.statusCode).toBe(422);
    expect(json(response).result.code).toBe('blocked_address');
    expect(response.body).not.toContain('10.1.2.3');
  });

  it('with SLUICE_WEBHOOK_ALLOW_PRIVATE=true accepts plain http on loopback', async () => {
    const h = await openApiHarness({ SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    const { key } = await newAccount(h);
    const response = await call(h, key, 'POST', '/api/webhooks', { url: 'http://127.0.0.1:9/hook' });
    expect(response.statusCode).toBe(200);
  });
});
