import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../src/api/build-app.js';
import { importPasswords } from '../../src/lookups/password/password-range-import.js';
import { createLogger } from '../../src/shared/logger.js';
import { INDEX_DIR } from '../../src/lookups/password/password-range-format.js';
import { STORE_KINDS, type StoreKind } from '../../src/storage/store.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import { generatedHashes, sha1Hex, writeCombined } from '../support/password-hashes.js';
import { startRangeFake } from '../support/range-provider-fake.js';

const CHECK = '/api/lookup/email/password/breaches';
const PASSWORD = 'Tr0ub4dor&3 — ünïcode';
const PASSWORD_SHA1 = sha1Hex(PASSWORD);
const OTHER = 'hunter2';
const HASHES = [...generatedHashes(5_000, 'api'), { hash: PASSWORD_SHA1, count: 3_861_493 }, { hash: sha1Hex(OTHER), count: 17_043 }].sort((a, b) => (a.hash < b.hash ? -1 : 1));

afterEach(closeHarnesses);

async function withIndex(store: StoreKind, env: Record<string, string> = {}): Promise<ApiHarness> {
  const h = await openStoreHarness(store, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', ...env });
  const file = writeCombined(path.join(h.engine.config.dataDir, 'pwned.txt'), HASHES);
  await importPasswords(file, { dataDir: h.engine.config.dataDir, records: h.engine.deps.store.limits, now: () => Date.now() });
  fs.rmSync(file);
  return h;
}

const check = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: CHECK, headers: bearer(key), payload: payload as Record<string, unknown> });
const range = (h: ApiHarness, key: string, prefix: string, headers: Record<string, string> = {}) =>
  h.app.inject({ method: 'GET', url: `/api/range/${prefix}`, headers: { ...bearer(key), ...headers } });

describe.each(TEST_STORES)('password breaches on %s', (store) => {
  it('answers breached and count from the local index; 1 credit first, repeats free in either form, nothing charged for a refusal', async () => {
    const h = await withIndex(store);
    const { id, key } = await newAccount(h, { credits: 2 });
    const first = await check(h, key, { password: PASSWORD });
    expect(first.statusCode, first.body).toBe(200);
    expect(json(first)).toEqual({ breached: true, count: 3_861_493, source: 'local_index', prefix: PASSWORD_SHA1.slice(0, 5), credits: 1, cached: false });
    // The same password as a client-side SHA-1, lowercase: the same key, a free repeat.
    expect(json(await check(h, key, { sha1: PASSWORD_SHA1.toLowerCase() }))).toEqual({ breached: true, count: 3_861_493, source: 'local_index', prefix: PASSWORD_SHA1.slice(0, 5), credits: 0, cached: false });
    const clean = sha1Hex('nobody would ever pick this 9f2e1c');
    expect(json(await check(h, key, { sha1: clean }))).toEqual({ breached: false, count: 0, source: 'local_index', prefix: clean.slice(0, 5), credits: 1, cached: false });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);
    expect(json(await check(h, key, { password: PASSWORD }))).toMatchObject({ breached: true, credits: 0 });
    const unpaid = await check(h, key, { password: OTHER });
    expect(unpaid.statusCode).toBe(402);
    expect(json(unpaid)).toMatchObject({ code: 'insufficient_credits' });
  });

  it('refuses bad input with stable codes, free', async () => {
    const h = await withIndex(store);
    const { id, key } = await newAccount(h, { credits: 5 });
    for (const [payload, status, code] of [
      [{ password: '' }, 400, 'empty_value'],
      [{ sha1: '' }, 400, 'empty_value'],
      [{ sha1: 'abc' }, 400, 'invalid_sha1'],
      [{ sha1: 'Z'.repeat(40) }, 400, 'invalid_sha1'],
      [{}, 422, 'invalid_request'],
      [{ password: 'x', sha1: PASSWORD_SHA1 }, 422, 'invalid_request'],
      [{ password: 42 }, 422, 'invalid_request'],
      [{ password: 'x'.repeat(1_025) }, 422, 'invalid_request'],
    ] as const) {
      const response = await check(h, key, payload);
      expect(response.statusCode, JSON.stringify(payload)).toBe(status);
      expect(json(response)).toMatchObject({ code });
    }
    for (const prefix of ['ABCD', 'ABCDEF', 'ABCDG', 'AB%20CD']) {
      const response = await range(h, key, prefix);
      expect(response.statusCode, prefix).toBe(400);
      expect(json(response)).toMatchObject({ code: 'invalid_prefix' });
    }
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(5);
    expect((await h.app.inject({ method: 'POST', url: CHECK, payload: { password: PASSWORD } })).statusCode).toBe(401);
    expect((await h.app.inject({ method: 'GET', url: '/api/range/ABCDE' })).statusCode).toBe(401);
  });

  it('serves ranges in HIBP format, padded by default with count 0 rows, free', async () => {
    const h = await withIndex(store);
    const { id, key } = await newAccount(h, { credits: 1 });
    const prefix = PASSWORD_SHA1.slice(0, 5);
    const real = HASHES.filter((r) => r.hash.startsWith(prefix)).map((r) => `${r.hash.slice(5)}:${r.count}`);
    const padded = await range(h, key, prefix.toLowerCase());
    expect(padded.statusCode, padded.body).toBe(200);
    expect(padded.headers['content-type']).toBe('text/plain; charset=utf-8');
    const lines = padded.body.split('\r\n');
    expect(padded.body).not.toMatch(/(^|[^\r])\n/);
    expect(lines.length).toBe(1_000);
    for (const line of lines) expect(line).toMatch(/^[0-9A-F]{35}:\d+$/);
    expect(lines.filter((l) => !l.endsWith(':0'))).toEqual(real);
    expect([...lines].sort()).toEqual(lines);
    // Padding is drawn afresh: two answers share their real rows only.
    const again = (await range(h, key, prefix)).body.split('\r\n');
    expect(again.filter((l) => lines.includes(l)).sort()).toEqual([...real].sort());

    const bare = await range(h, key, prefix, { 'add-padding': 'false' });
    expect(bare.body.split('\r\n')).toEqual(real);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(1);
  });

  it('with no index imported and no range service, answers 503 provider_unavailable and charges nothing', async () => {
    const h = await openStoreHarness(store);
    const { id, key } = await newAccount(h, { credits: 3 });
    const response = await check(h, key, { password: PASSWORD });
    expect(response.statusCode, response.body).toBe(503);
    expect(json(response)).toMatchObject({ code: 'provider_unavailable' });
    expect((await range(h, key, 'ABCDE')).statusCode).toBe(503);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(3);
  });

  it('never logs or stores the password or its SHA-1, not even for an account subscribed to lookup.completed', async () => {
    const h = await withIndex(store);
    const { key } = await newAccount(h, { credits: 10 });
    const hook = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url: 'http://127.0.0.1:9/hook', events: ['lookup.completed'] } });
    expect(hook.statusCode, hook.body).toBe(200);
    let logged = '';
    const app = await buildApp(h.deps, createLogger('trace', new Writable({ write: (chunk, _e, done) => ((logged += String(chunk)), done()) })));
    try {
      for (const payload of [{ password: PASSWORD }, { password: OTHER }, { sha1: sha1Hex('third one').toLowerCase() }, { password: PASSWORD }]) {
        const response = await app.inject({ method: 'POST', url: CHECK, headers: bearer(key), payload });
        expect(response.statusCode, response.body).toBe(200);
      }
      // A validation failure's message must not echo the value either.
      await app.inject({ method: 'POST', url: CHECK, headers: bearer(key), payload: { password: PASSWORD, sha1: 'x' } });
    } finally {
      await app.close();
    }
    expect(logged).toContain(CHECK);
    const secrets = [PASSWORD, OTHER, 'third one', PASSWORD_SHA1, sha1Hex(OTHER), sha1Hex('third one')];
    for (const secret of secrets) {
      expect(logged.toUpperCase()).not.toContain(secret.toUpperCase());
    }
    expect(await storedText(h, secrets)).toEqual([]);
  });

  it('checks through a remote range service (SLUICE_PASSWORD_RANGE_URL) that sees only 5-hex prefixes', async () => {
    const fake = await startRangeFake(HASHES);
    try {
      const h = await openStoreHarness(store, { SLUICE_PASSWORD_RANGE_URL: `${fake.url}/` });
      const { key } = await newAccount(h, { credits: 5 });
      expect(json(await check(h, key, { password: PASSWORD }))).toEqual({ breached: true, count: 3_861_493, source: 'remote_range', prefix: PASSWORD_SHA1.slice(0, 5), credits: 1, cached: false });
      expect(json(await check(h, key, { password: 'not in the fake 71b0' }))).toMatchObject({ breached: false, count: 0, source: 'remote_range' });
      // Sluice's own range endpoint passes the service's rows on, its padding dropped and its own added.
      const served = (await range(h, key, PASSWORD_SHA1.slice(0, 5), { 'add-padding': 'false' })).body.split('\r\n');
      expect(served).toEqual(HASHES.filter((r) => r.hash.startsWith(PASSWORD_SHA1.slice(0, 5))).map((r) => `${r.hash.slice(5)}:${r.count}`));
      expect(fake.requests.length).toBe(3);
      // A remote answer is not put in the result cache either: it would be keyed by the SHA-1.
      expect(await storedText(h, [PASSWORD, PASSWORD_SHA1])).toEqual([]);
      for (const request of fake.requests) {
        expect(request.path).toMatch(/^\/range\/[0-9A-F]{5}$/);
        expect(request.raw.toUpperCase()).not.toContain(PASSWORD_SHA1.slice(5, 15));
        expect(request.raw).not.toContain(PASSWORD);
      }
    } finally {
      await fake.close();
    }
  });
});

/**
 * Which of `secrets` any stored byte holds: every file of the data dir but the imported index (which
 * holds breached hashes by design), and on PostgreSQL every row of every table, as text.
 */
async function storedText(h: ApiHarness, secrets: string[]): Promise<string[]> {
  const needles = secrets.flatMap((s) => [s, s.toLowerCase(), s.toUpperCase()]);
  const found = new Set<string>();
  const dataDir = h.engine.config.dataDir;
  const walk = (dir: string): string[] =>
    fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? (e.name === INDEX_DIR ? [] : walk(path.join(dir, e.name))) : [path.join(dir, e.name)]));
  for (const file of walk(dataDir)) {
    const bytes = fs.readFileSync(file);
    for (const needle of needles) if (bytes.includes(Buffer.from(needle, 'utf8'))) found.add(`${path.relative(dataDir, file)}: ${needle}`);
    for (const secret of secrets.filter((s) => /^[0-9A-F]{40}$/.test(s))) if (bytes.includes(Buffer.from(secret, 'hex'))) found.add(`${file}: binary ${secret}`);
  }
  if (h.engine.deps.store.kind === STORE_KINDS.postgres) {
    const client = new pg.Client({ connectionString: h.engine.config.database.url });
    await client.connect();
    try {
      const tables = await client.query<{ table_name: string }>("SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'");
      expect(tables.rows.length).toBeGreaterThan(10);
      for (const { table_name } of tables.rows) {
        for (const secret of secrets) {
          // ILIKE: a bytea column's text is its lowercase hex, so this finds a raw SHA-1 too.
          const hit = await client.query(`SELECT 1 FROM "${table_name}" t WHERE t::text ILIKE $1 LIMIT 1`, [`%${secret}%`]);
          if (hit.rowCount! > 0) found.add(`${table_name}: ${secret}`);
        }
      }
    } finally {
      await client.end();
    }
  }
  return [...found];
}
