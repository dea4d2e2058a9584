import { afterEach, describe, expect, it } from 'vitest';
import type { Role } from '../../src/auth/key-store.js';
import { addKey, bearer, closeHarnesses, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { roleTable, ROLE_ORDER, type RoleRow } from '../support/role-table.js';
import { TEST_STORES } from '../support/test-engine.js';

function matrix(): RoleRow[] {
  const rows = roleTable('action');
  expect(rows, 'the key matrix is in README.md').toBeDefined();
  return rows!;
}

interface Setup {
  h: ApiHarness;
  caller: { key: string; keyId: string };
  accountId: string;
  adminKey: string;
}

const call = (s: Setup, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  s.h.app.inject({ method, url, headers: bearer(s.caller.key), ...(payload ? { payload } : {}) });

/** Acts on a fresh key of each role; says which roles it could act on, in the cells' words. */
async function onEachRole(s: Setup, label: string, act: (id: string) => Promise<{ statusCode: number }>): Promise<string> {
  const ok: Role[] = [];
  for (const role of ROLE_ORDER) {
    const target = await addKey(s.h, s.accountId, role, `${label} ${role}`);
    if ((await act(target.keyId)).statusCode === 200) ok.push(role);
  }
  if (ok.length === 0) return 'no (403)';
  return ok.length === 3 ? 'any key' : ok.join(',') === 'readonly,tech' ? 'a `tech` or `readonly` key' : `unexpected ${ok.join(',')}`;
}

/**
 * What a key of the caller's role was seen to do, in the words of the table's cells: each probe
 * acts for real and describes the outcome, so a cell that says something the API does not do fails.
 */
const PROBES: Record<string, (s: Setup) => Promise<string>> = {
  'create a key': async (s) => {
    const made: Role[] = [];
    for (const role of ROLE_ORDER) if ((await call(s, 'POST', '/api/account/keys', { name: `made ${role}`, role })).statusCode === 200) made.push(role);
    if (made.length === 0) return 'no (403)';
    if (made.length === 3) return 'any role';
    return made.includes('admin') ? `unexpected ${made.join(',')}` : '`tech` or `readonly` keys';
  },
  'list keys': async (s) => ((await call(s, 'GET', '/api/account/keys')).statusCode === 200 ? 'yes' : 'no'),
  'reveal a key\'s secret (inside the window)': async (s) => {
    const own = (await call(s, 'GET', `/api/account/keys/reveal?id=${s.caller.keyId}`)).statusCode === 200;
    const other = await addKey(s.h, s.accountId, 'readonly', 'other');
    const others = (await call(s, 'GET', `/api/account/keys/reveal?id=${other.keyId}`)).statusCode === 200;
    return others ? 'any key of the account' : own ? 'its own only' : 'no (403)';
  },
  'disable a key': (s) => onEachRole(s, 'target', (id) => call(s, 'PATCH', `/api/account/keys?id=${id}&action=disable`)),
  'roll a key': (s) => onEachRole(s, 'to roll', (id) => call(s, 'POST', '/api/account/keys/roll', { id })),
  'enable a key': async (s) => {
    const ok: Role[] = [];
    for (const role of ROLE_ORDER) {
      const target = await addKey(s.h, s.accountId, role, `disabled ${role}`);
      await s.h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${target.keyId}&action=disable`, headers: bearer(s.adminKey) });
      if ((await call(s, 'PATCH', `/api/account/keys?id=${target.keyId}&action=enable`)).statusCode === 200) ok.push(role);
    }
    if (ok.length === 0) return 'no (403)';
    return ok.length === 3 ? 'any key that is not revoked' : `unexpected ${ok.join(',')}`;
  },
  'revoke a key': async (s) => {
    const target = await addKey(s.h, s.accountId, 'readonly', 'to revoke');
    for (const method of ['DELETE', 'PATCH'] as const) {
      const url = method === 'DELETE' ? `/api/account/keys?id=${target.keyId}` : `/api/account/keys?id=${target.keyId}&action=revoke`;
      await call(s, method, url);
    }
    const row = await s.h.deps.keys.get(target.keyId);
    return row?.revokedAt === null ? (s.caller.key === s.adminKey ? 'no: `sluice keys revoke` (operator) only' : 'no') : 'revoked over HTTP';
  },
};

describe.each(TEST_STORES)('the key matrix of the README, row by row, on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('every row and role does what its cell says', async () => {
    const rows = matrix();
    expect(rows.map((r) => r.name)).toEqual(Object.keys(PROBES));
    const h = await openStoreHarness(kind, { SLUICE_RATE_LIMIT_PER_MINUTE: '10000' });
    for (const row of rows) {
      for (const role of ROLE_ORDER) {
        // An account of its own per cell: no cell sees what another made or disabled.
        const a = await newAccount(h);
        const caller = role === 'admin' ? { key: a.key, keyId: a.keyId } : await addKey(h, a.id, role, `caller ${role}`);
        const seen = await PROBES[row.name]!({ h, caller, accountId: a.id, adminKey: a.key });
        expect(seen, `${row.name} by ${role}`).toBe(row[role]);
      }
    }
  }, 120_000);
});
