import { afterEach, describe, expect, it } from 'vitest';
import { MAX_KEYS_PER_ACCOUNT } from '../../src/api/routes/key-routes.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openStoreHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 27, finding 4: a tech key re-enabled a tech key an admin had disabled after a leak, and
 * tech keys could create any number of keys.
 */
describe.each(TEST_STORES)('what a tech key may do to keys, on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('disables a key of its rank, but never enables one: only an admin undoes a disable', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech', 'ci');
    const leaked = await addKey(h, a.id, 'tech', 'leaked');
    const patch = (key: string, id: string, action: string) => h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${id}&action=${action}`, headers: bearer(key) });
    expect((await patch(a.key, leaked.keyId, 'disable')).statusCode).toBe(200);
    const reenabled = await patch(tech.key, leaked.keyId, 'enable');
    expect(reenabled.statusCode, reenabled.body).toBe(403);
    expect((await h.app.inject({ method: 'GET', url: '/api/account', headers: bearer(leaked.key) })).statusCode).toBe(401);
    // A tech key still contains a leak, and the admin can undo it.
    expect((await patch(tech.key, leaked.keyId, 'disable')).statusCode).toBe(200);
    expect((await patch(a.key, leaked.keyId, 'enable')).statusCode).toBe(200);
  });

  it(`creates keys only up to ${MAX_KEYS_PER_ACCOUNT} not revoked per account, then 409 too_many_keys`, async () => {
    const h = await openStoreHarness(kind, { SLUICE_RATE_LIMIT_PER_MINUTE: '10000' });
    const a = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech', 'ci');
    const create = () => h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(tech.key), payload: { name: 'minted', role: 'tech' } });
    const made: string[] = [];
    for (let i = 2; i < MAX_KEYS_PER_ACCOUNT; i++) {
      const r = await create();
      expect(r.statusCode, r.body).toBe(200);
      made.push(json(r).id);
    }
    const refused = await create();
    expect(refused.statusCode, refused.body).toBe(409);
    expect(refused.body).toContain('too_many_keys');
    // A revoked key (`sluice keys revoke`) frees its place.
    expect(await h.deps.keys.revoke(made[0]!, Date.now())).toBe(true);
    expect((await create()).statusCode).toBe(200);
  });
});
