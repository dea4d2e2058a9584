import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Role } from '../../src/auth/key-store.js';
import { addKey, bearer, closeHarnesses, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { REPO_ROOT, TEST_STORES } from '../support/test-engine.js';

const ROLE_ORDER: Role[] = ['readonly', 'tech', 'admin'];

/** The role × action table of docs/security.md, as rows of {action, readonly, tech, admin}. */
type MatrixRow = { action: string } & Record<Role, string>;

function matrix(): MatrixRow[] {
  const doc = fs.readFileSync(path.join(REPO_ROOT, 'docs/security.md'), 'utf8');
  const start = doc.indexOf('| action | readonly | tech | admin |');
  expect(start, 'the key matrix is in docs/security.md').toBeGreaterThan(0);
  const lines = doc.slice(start).split('\n');
  const rows: MatrixRow[] = [];
  for (const line of lines.slice(2)) {
    if (!line.startsWith('|')) break;
    const [action, readonly, tech, admin] = line.split('|').slice(1, -1).map((c) => c.trim());
    rows.push({ action: action!, readonly: readonly!, tech: tech!, admin: admin! });
  }
  return rows;
}

interface Setup {
  h: ApiHarness;
  caller: { key: string; keyId: string };
  accountId: string;
  adminKey: string;
}

const call = (s: Setup, method: 'GET' | 'POST' | 'PATCH' | 'DELETE', url: string, payload?: object) =>
  s.h.app.inject({ method, url, headers: bearer(s.caller.key), ...(payload ? { payload } : {}) });

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
  'disable a key': async (s) => {
    const ok: Role[] = [];
    for (const role of ROLE_ORDER) {
      const target = await addKey(s.h, s.accountId, role, `target ${role}`);
      if ((await call(s, 'PATCH', `/api/account/keys?id=${target.keyId}&action=disable`)).statusCode === 200) ok.push(role);
    }
    if (ok.length === 0) return 'no (403)';
    return ok.length === 3 ? 'any key' : ok.join(',') === 'readonly,tech' ? 'a `tech` or `readonly` key' : `unexpected ${ok.join(',')}`;
  },
  'roll a key': async (s) => {
    const ok: Role[] = [];
    for (const role of ROLE_ORDER) {
      const target = await addKey(s.h, s.accountId, role, `to roll ${role}`);
      if ((await call(s, 'POST', '/api/account/keys/roll', { id: target.keyId })).statusCode === 200) ok.push(role);
    }
    if (ok.length === 0) return 'no (403)';
    return ok.length === 3 ? 'any key' : ok.join(',') === 'readonly,tech' ? 'a `tech` or `readonly` key' : `unexpected ${ok.join(',')}`;
  },
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

describe.each(TEST_STORES)('the key matrix of docs/security.md, row by row, on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('every row and role does what its cell says', async () => {
    const rows = matrix();
    expect(rows.map((r) => r.action)).toEqual(Object.keys(PROBES));
    const h = await openStoreHarness(kind, { SLUICE_RATE_LIMIT_PER_MINUTE: '10000' });
    for (const row of rows) {
      for (const role of ROLE_ORDER) {
        // An account of its own per cell: no cell sees what another made or disabled.
        const a = await newAccount(h);
        const caller = role === 'admin' ? { key: a.key, keyId: a.keyId } : await addKey(h, a.id, role, `caller ${role}`);
        const seen = await PROBES[row.action]!({ h, caller, accountId: a.id, adminKey: a.key });
        expect(seen, `${row.action} by ${role}`).toBe(row[role]);
      }
    }
  }, 120_000);
});
