import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { KEY_PATTERN, mintKey } from '../../src/auth/key-format.js';
import { randomToken, sha256 } from '../../src/auth/secrets.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';

/**
 * Beyond the audit of issue 16: keys carry a CRC-32 of their random part, so a secret scanner can
 * recognise one offline and the API refuses a mistyped key before any store lookup, while keys
 * issued before the checksum keep working.
 */
describe.each(TEST_STORES)('API key format on %s', (kind) => {
  const drops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    await closeHarnesses();
    for (const drop of drops.splice(0)) await drop();
  });

  async function open(): Promise<ApiHarness> {
    const store = await storeEnv(kind);
    drops.push(store.drop);
    return openApiHarness(store.env);
  }

  const listKeys = (h: ApiHarness, key: string) => h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(key) });
  const agentCall = (h: ApiHarness, key: string) =>
    h.app.inject({ method: 'POST', url: '/api/agent/company', headers: bearer(key), payload: { domain: 'example.com' } });

  it('issues keys in the checksummed format, through the API as well', async () => {
    const h = await open();
    const a = await newAccount(h);
    expect(a.key).toMatch(KEY_PATTERN);
    const created = await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(a.key), payload: { name: 'second' } });
    expect(created.statusCode).toBe(200);
    expect(json(created).key).toMatch(KEY_PATTERN);
    expect((await listKeys(h, json(created).key)).statusCode).toBe(200);
  });

  it('refuses a key with one character mistyped as `bad key`, without looking it up', async () => {
    const h = await open();
    const a = await newAccount(h);
    const lookups = vi.spyOn(h.engine.deps.store.keys, 'byHash');
    const at = a.key.length - 10;
    const typo = a.key.slice(0, at) + (a.key[at] === 'x' ? 'y' : 'x') + a.key.slice(at + 1);

    const refused = await agentCall(h, typo);
    expect({ status: refused.statusCode, body: json(refused) }).toEqual({ status: 401, body: { c: 401, m: 'bad key' } });
    expect((await listKeys(h, typo)).statusCode).toBe(401);
    expect(lookups).not.toHaveBeenCalled();
    // No rate-limit request was spent on the account for the garbage either.
    const fine = await listKeys(h, a.key);
    expect(fine.statusCode).toBe(200);
    expect(lookups).toHaveBeenCalledTimes(1);
    expect(Number(fine.headers['x-ratelimit-limit']) - Number(fine.headers['x-ratelimit-remaining'])).toBe(1);
  });

  it('answers a well-formed unknown key exactly as a mistyped one, after one lookup', async () => {
    const h = await open();
    await newAccount(h);
    const lookups = vi.spyOn(h.engine.deps.store.keys, 'byHash');
    const unknown = await agentCall(h, mintKey());
    expect({ status: unknown.statusCode, body: json(unknown) }).toEqual({ status: 401, body: { c: 401, m: 'bad key' } });
    expect(lookups).toHaveBeenCalledTimes(1);
  });

  it('still accepts a key issued in the format before the checksum, and still refuses one never issued', async () => {
    const h = await open();
    const a = await newAccount(h);
    // Written as the old KeyStore.create wrote it: `sluice_` and 32 base62 characters, stored as a hash.
    const legacy = `sluice_${randomToken(32)}`;
    const now = h.engine.deps.clock.now();
    await h.engine.deps.store.keys.insert({
      id: randomUUID(),
      accountId: a.id,
      name: 'issued last year',
      keyHash: sha256(legacy),
      keyPrefix: legacy.slice(0, 13),
      role: 'admin',
      sealed: null,
      revealUntil: now,
      now,
    });
    const listed = await listKeys(h, legacy);
    expect(listed.statusCode).toBe(200);
    expect(json(listed).keys.map((k: { name: string }) => k.name)).toContain('issued last year');

    const neverIssued = await listKeys(h, `sluice_${randomToken(32)}`);
    expect(neverIssued.statusCode).toBe(401);
  });
});
