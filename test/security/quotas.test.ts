import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, multipart, newAccount, openStoreHarness, storedObjects, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 27, finding 3: an account with no credits stored a million-target list, monitors on it
 * and hundreds of MB of files, all free and without limit. Every kind of stored thing now has a
 * per-account quota (settings SLUICE_QUOTA_*), counted from the store, refused with 409
 * `quota_exceeded` (`too_many_keys` for keys) before anything is written, and shown in
 * GET /api/account.
 */
describe.each(TEST_STORES)('per-account quotas on %s', (kind) => {
  afterEach(() => closeHarnesses());

  const call = (h: ApiHarness, key: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
    h.app.inject({ method, url, headers: bearer(key), ...(payload ? { payload } : {}) });
  const emails = (n: number, tag = 'x') => Array.from({ length: n }, (_, i) => `${tag}${i}@example.com`);
  const quotasOf = async (h: ApiHarness, key: string) => json(await call(h, key, 'GET', '/api/account')).quotas;
  const expectQuota = (r: { statusCode: number; body: string }, quota: string) => {
    expect(r.statusCode, r.body).toBe(409);
    expect(json(r).error?.code ?? json(r).code, r.body).toBe('quota_exceeded');
    expect(r.body).toContain(quota);
  };

  it('counts lists made by any process from the store, refuses one past SLUICE_QUOTA_LISTS, and frees a place on delete', async () => {
    const h = await openStoreHarness(kind, { SLUICE_QUOTA_LISTS: '2' });
    const a = await newAccount(h);
    const other = await newAccount(h);
    // As another API process would: straight into the shared store.
    await h.engine.deps.store.monitors.createList({ id: 'list-from-elsewhere', accountId: a.id, name: 'elsewhere', type: 'email', sourceKey: null, now: Date.now() });
    const second = await call(h, a.key, 'POST', '/api/lists', { name: 'two', type: 'email', targets: emails(3) });
    expect(second.statusCode, second.body).toBe(201);
    expectQuota(await call(h, a.key, 'POST', '/api/lists', { name: 'three', type: 'email', targets: emails(3) }), 'lists');
    // A CSV list is refused too, and its file is not kept.
    const csv = multipart([{ name: 'name', value: 'csv' }, { name: 'type', value: 'email' }, { name: 'file', value: 'email\na@example.com\n', filename: 'a.csv' }]);
    expectQuota(await h.app.inject({ method: 'POST', url: '/api/lists', headers: { ...bearer(a.key), ...csv.headers }, payload: csv.payload }), 'lists');
    expect(storedObjects(h, 'lists/')).toEqual([]);
    expect((await quotasOf(h, a.key)).lists).toEqual({ limit: 2, used: 2 });
    // Another account's quota is its own.
    expect((await call(h, other.key, 'POST', '/api/lists', { name: 'b', type: 'email', targets: emails(1) })).statusCode).toBe(201);
    expect((await call(h, a.key, 'DELETE', `/api/lists/${json(second).id}`)).statusCode).toBe(200);
    expect((await call(h, a.key, 'POST', '/api/lists', { name: 'again', type: 'email', targets: emails(1) })).statusCode).toBe(201);
  });

  it('refuses a monitor past SLUICE_QUOTA_MONITORS', async () => {
    const h = await openStoreHarness(kind, { SLUICE_QUOTA_MONITORS: '1' });
    const a = await newAccount(h);
    const monitor = (name: string) => call(h, a.key, 'POST', '/api/monitors', { name, type: 'email', frequency: 'weekly', targets: emails(2), start_at: '2099-01-01T00:00:00Z' });
    expect((await monitor('one')).statusCode).toBe(201);
    expectQuota(await monitor('two'), 'monitors');
    expect((await quotasOf(h, a.key)).monitors).toEqual({ limit: 1, used: 1 });
  });

  it('bounds targets per list (JSON, CSV, a monitor) and in all, adding nothing past them', async () => {
    const h = await openStoreHarness(kind, { SLUICE_QUOTA_TARGETS_PER_LIST: '5', SLUICE_QUOTA_TARGETS: '8' });
    const a = await newAccount(h);
    expectQuota(await call(h, a.key, 'POST', '/api/lists', { name: 'six', type: 'email', targets: emails(6) }), 'targets_per_list');
    // A CSV of 6 targets: its first batch would pass the per-list limit, so no list is left behind.
    const csv = multipart([{ name: 'name', value: 'csv' }, { name: 'type', value: 'email' }, { name: 'file', value: `email\n${emails(6, 'c').join('\n')}\n`, filename: 'a.csv' }]);
    expectQuota(await h.app.inject({ method: 'POST', url: '/api/lists', headers: { ...bearer(a.key), ...csv.headers }, payload: csv.payload }), 'targets_per_list');
    expect(json(await call(h, a.key, 'GET', '/api/lists')).total).toBe(0);

    const five = await call(h, a.key, 'POST', '/api/lists', { name: 'five', type: 'email', targets: emails(5) });
    expect(five.statusCode, five.body).toBe(201);
    // 5 in the list + 4 in a monitor would be 9 of 8 in all.
    expectQuota(await call(h, a.key, 'POST', '/api/monitors', { name: 'm', type: 'email', frequency: 'weekly', targets: emails(4, 'm'), start_at: '2099-01-01T00:00:00Z' }), 'targets');
    const m = await call(h, a.key, 'POST', '/api/monitors', { name: 'm', type: 'email', frequency: 'weekly', targets: emails(3, 'm'), start_at: '2099-01-01T00:00:00Z' });
    expect(m.statusCode, m.body).toBe(201);
    // A monitor seeded from the 5-target list would hold 13 in all.
    expectQuota(await call(h, a.key, 'POST', `/api/monitors/${json(m).id}/targets`, { list_id: json(five).id }), 'targets');
    expectQuota(await call(h, a.key, 'POST', `/api/monitors/${json(m).id}/targets`, { targets: emails(1, 'n') }), 'targets');
    expect((await quotasOf(h, a.key)).targets).toEqual({ limit: 8, used: 8 });
    expect((await quotasOf(h, a.key)).targets_per_list).toEqual({ limit: 5, used: 5 });
    expect(json(await call(h, a.key, 'GET', `/api/monitors/${json(m).id}`)).target_count).toBe(3);
  });

  it('refuses an upload that would pass SLUICE_QUOTA_STORED_BYTES and keeps none of it', async () => {
    const h = await openStoreHarness(kind, { SLUICE_QUOTA_STORED_BYTES: '3000' });
    const a = await newAccount(h);
    const file = `email\n${emails(100, 'stored').join('\n')}\n`;
    expect(Buffer.byteLength(file)).toBeGreaterThan(1500);
    const first = await uploadCsv(h, a.key, file);
    expect(first.statusCode, first.body).toBe(202);
    expect((await quotasOf(h, a.key)).stored_bytes).toEqual({ limit: 3000, used: Buffer.byteLength(file) });
    expectQuota(await uploadCsv(h, a.key, file), 'stored_bytes');
    expect(storedObjects(h, 'inputs/')).toHaveLength(1);
    expect(json(await call(h, a.key, 'GET', '/api/jobs')).total).toBe(1);
  });

  it('caps API keys at SLUICE_QUOTA_API_KEYS, shown with the others in GET /api/account', async () => {
    const h = await openStoreHarness(kind, { SLUICE_QUOTA_API_KEYS: '3' });
    const a = await newAccount(h);
    const create = () => call(h, a.key, 'POST', '/api/account/keys', { name: 'k', role: 'tech' });
    expect((await create()).statusCode).toBe(200);
    expect((await create()).statusCode).toBe(200);
    const refused = await create();
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.body).toContain('too_many_keys');
    const quotas = await quotasOf(h, a.key);
    expect(quotas.api_keys).toEqual({ limit: 3, used: 3 });
    expect(Object.keys(quotas).sort()).toEqual(['api_keys', 'lists', 'monitors', 'stored_bytes', 'targets', 'targets_per_list']);
  });
});
