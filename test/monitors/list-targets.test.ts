import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, multipart, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 33: a list's targets can be read (the dashboard's lists page shows them), page by page in
 * the list's own order, on both stores; another account's list reads as absent.
 */
afterEach(closeHarnesses);

function uploadList(h: ApiHarness, key: string, fields: Record<string, string>, csv: string) {
  const { payload, headers } = multipart([
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
    { name: 'file', filename: 'targets.csv', contentType: 'text/csv', value: csv },
  ]);
  return h.app.inject({ method: 'POST', url: '/api/lists', headers: { ...bearer(key), ...headers }, payload });
}

const get = (h: ApiHarness, key: string, url: string) => h.app.inject({ method: 'GET', url, headers: bearer(key) });

describe.each(TEST_STORES)('GET /api/lists/{id}/targets on %s', (kind) => {
  it('pages through the targets in the file\'s order, a duplicate in its first place, invalid rows left out', async () => {
    const h = await openStoreHarness(kind);
    const alice = (await newAccount(h)).key;
    const bob = (await newAccount(h)).key;
    const csv = 'name,email\nZed,ZED@example.com\nAmy,amy@example.com\nBad,not-an-address\nMia,mia@example.com\nZed again,zed@example.com\nBob,bob@example.com\n';
    const created = await uploadList(h, alice, { name: 'staff', type: 'email', column: 'email' }, csv);
    expect(created.statusCode, created.body).toBe(201);
    const list = json(created);
    expect(list).toMatchObject({ target_count: 4, duplicate_count: 1, invalid_count: 1, invalid: { examples: [{ row: 3, value: 'not-an-address', code: 'invalid_email' }] } });

    const first = await get(h, alice, `/api/lists/${list.id}/targets?limit=3`);
    expect(first.statusCode, first.body).toBe(200);
    expect(json(first)).toEqual({
      targets: [
        { email: 'zed@example.com', target: 'zed@example.com', position: 1 },
        { email: 'amy@example.com', target: 'amy@example.com', position: 2 },
        { email: 'mia@example.com', target: 'mia@example.com', position: 3 },
      ],
      total: 4,
      limit: 3,
      offset: 0,
    });
    const rest = json(await get(h, alice, `/api/lists/${list.id}/targets?limit=3&offset=3`));
    expect(rest).toEqual({ targets: [{ email: 'bob@example.com', target: 'bob@example.com', position: 4 }], total: 4, limit: 3, offset: 3 });

    // Another account's list is absent; a deleted list too.
    const other = await get(h, bob, `/api/lists/${list.id}/targets`);
    expect(other.statusCode).toBe(404);
    expect(json(other).code).toBe('list_not_found');
    expect((await h.app.inject({ method: 'DELETE', url: `/api/lists/${list.id}`, headers: bearer(alice) })).statusCode).toBe(200);
    expect((await get(h, alice, `/api/lists/${list.id}/targets`)).statusCode).toBe(404);
  });

  it('names a phone list\'s targets under `phone`, in E.164', async () => {
    const h = await openStoreHarness(kind);
    const key = (await newAccount(h)).key;
    const list = json(await h.app.inject({ method: 'POST', url: '/api/lists', headers: bearer(key), payload: { name: 'p', type: 'phone', targets: ['030 1234567', '+1 415 555 2671'], default_country: 'DE' } }));
    expect(json(await get(h, key, `/api/lists/${list.id}/targets`)).targets).toEqual([
      { phone: '+49301234567', target: '+49301234567', position: 1 },
      { phone: '+14155552671', target: '+14155552671', position: 2 },
    ]);
  });
});
