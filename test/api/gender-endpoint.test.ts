import { afterEach, describe, expect, it } from 'vitest';
import type { LookupOutcome, LookupProvider } from '../../src/lookups/lookup-provider.js';
import {
  addKey,
  bearer,
  closeHarnesses,
  expectNoLeak,
  json,
  newAccount,
  openApiHarness,
  runUntilDone,
  streamToBuffer,
  uploadCsv,
  type ApiHarness,
} from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';
import { cachedProvider } from '../support/test-engine.js';

afterEach(closeHarnesses);

const PATHS = ['/api/email/gender', '/api/lookup/email/gender'] as const;
const SPEC_FIELDS = ['country', 'credits', 'email', 'gender', 'probability'];

/** An object is sent as JSON; a string is sent as it is, labelled JSON (for malformed bodies). */
function lookup(h: ApiHarness, path: string, key: string | undefined, body: object | string) {
  const auth = key === undefined ? {} : bearer(key);
  if (typeof body === 'string') {
    return h.app.inject({ method: 'POST', url: path, headers: { ...auth, 'content-type': 'application/json' }, payload: body });
  }
  return h.app.inject({ method: 'POST', url: path, headers: auth, payload: body });
}

/** Whether the account ever paid for the address: a charge leaves it in the billing window. */
async function billed(h: ApiHarness, accountId: string, address: string): Promise<boolean> {
  return (await h.engine.deps.billing.freshlyBilled(accountId, 'gender', [address], 0)).has(address);
}

function providers(h: ApiHarness): Map<string, LookupProvider> {
  return h.engine.deps.providers as Map<string, LookupProvider>;
}

/** A harness whose gender answers go through the result cache, as a remote service's do. */
async function cachedHarness(): Promise<ApiHarness> {
  const h = await openApiHarness();
  providers(h).set('gender', cachedProvider(providers(h).get('gender')!));
  return h;
}

/** A provider that fails the way a flaky upstream does: it throws, with internals in the message. */
const failingProvider: LookupProvider = {
  kind: 'gender',
  name: 'failing-gender',
  maxBatch: 100,
  async lookup(): Promise<LookupOutcome<unknown>[]> {
    throw new Error('upstream exploded at /work/main/node_modules/x.js:1:1\n    at Object.lookup (file:///work/main/src/x.ts:9:9)');
  },
};

describe.each(PATHS)('POST %s, the spec table row by row', (path) => {
  it('200: exactly email, gender, country, probability and credits 1 on a first lookup; no cached field', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const r = await lookup(h, path, a.key, { email: '  Maria.Rossi@Example.com ' });
    expect(r.statusCode).toBe(200);
    const body = json(r);
    expect(Object.keys(body).sort()).toEqual(SPEC_FIELDS);
    expect(body).toMatchObject({ email: 'maria.rossi@example.com', gender: 'female', credits: 1 });
    expect(body.country === null || /^[A-Z]{2}$/.test(body.country)).toBe(true);
    expect(typeof body.probability).toBe('number');
    expect(body.probability).toBeGreaterThanOrEqual(0);
    expect(body.probability).toBeLessThanOrEqual(100);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(9);
  });

  it('200: a repeat is free and says cached: true', async () => {
    const h = await cachedHarness();
    const a = await newAccount(h, { credits: 10 });
    const first = json(await lookup(h, path, a.key, { email: 'john.smith@example.com' }));
    const again = json(await lookup(h, path, a.key, { email: 'JOHN.SMITH@example.com' }));
    expect(again).toEqual({ ...first, credits: 0, cached: true });
    expect(Object.keys(again).sort()).toEqual([...SPEC_FIELDS, 'cached'].sort());
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(9);
  });

  it('200: on the embedded engine, which answers locally, a repeat is free with no cached field', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const first = json(await lookup(h, path, a.key, { email: 'john.smith@example.com' }));
    const again = json(await lookup(h, path, a.key, { email: 'JOHN.SMITH@example.com' }));
    expect(again).toEqual({ ...first, credits: 0 });
    expect((await h.engine.deps.results.getMany('gender', ['john.smith@example.com'], 0)).size).toBe(0);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(9);
  });

  it('200: an unknown verdict is billed like any result', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const body = json(await lookup(h, path, a.key, { email: 'zorblax.smith@example.com' }));
    expect(body).toEqual({ email: 'zorblax.smith@example.com', gender: 'unknown', country: null, probability: 0, credits: 1 });
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(9);
  });

  it('400 Invalid request body for malformed JSON; 400 Invalid email address for a syntax failure; neither billed', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const malformed = await lookup(h, path, a.key, '{"email": ');
    expect(malformed.statusCode).toBe(400);
    expect(json(malformed).error).toBe('Invalid request body');
    for (const email of ['maria@', 'maria rossi@example.com', '@example.com', 'maria@@example.com', 'maria@example']) {
      const r = await lookup(h, path, a.key, { email });
      expect({ email, status: r.statusCode, error: json(r).error }).toEqual({ email, status: 400, error: 'Invalid email address' });
    }
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(10);
  });

  it('401: API key required, bad key, and Unauthorized when the key\'s account cannot be used', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const disabled = await addKey(h, a.id);
    await h.deps.keys.setActive(disabled.keyId, false);
    const b = await newAccount(h, { credits: 10 });
    await h.engine.deps.billing.setStatus(b.id, 'suspended');

    const cases: [string | undefined, string][] = [
      [undefined, 'API key required'],
      ['sluice_thisKeyDoesNotExist000000000000', 'bad key'],
      ['not-even-a-sluice-key', 'bad key'],
      [disabled.key, 'bad key'],
      [b.key, 'Unauthorized'],
    ];
    for (const [key, error] of cases) {
      const r = await lookup(h, path, key, { email: 'maria@example.com' });
      expect({ key, status: r.statusCode, body: json(r) }).toEqual({ key, status: 401, body: { error } });
    }
    expect((await h.engine.deps.billing.requireAccount(b.id)).credits).toBe(10);
  });

  it('402 with the spec\'s text when the balance is empty, except for a free repeat', async () => {
    const h = await cachedHarness();
    const a = await newAccount(h, { credits: 1 });
    expect(json(await lookup(h, path, a.key, { email: 'maria.rossi@example.com' })).credits).toBe(1);

    const refused = await lookup(h, path, a.key, { email: 'john.smith@example.com' });
    expect(refused.statusCode).toBe(402);
    expect(json(refused).error).toBe('Insufficient credits. Please top up your account.');
    expect(await billed(h, a.id, 'john.smith@example.com')).toBe(false);

    const repeat = await lookup(h, path, a.key, { email: 'maria.rossi@example.com' });
    expect(repeat.statusCode).toBe(200);
    expect(json(repeat)).toMatchObject({ credits: 0, cached: true });
  });

  it('405 Only POST method is allowed', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    for (const method of ['GET', 'PUT', 'PATCH', 'DELETE'] as const) {
      const r = await h.app.inject({ method, url: path, headers: bearer(a.key) });
      expect(r.statusCode).toBe(405);
      expect(json(r).error).toBe('Only POST method is allowed');
    }
  });

  it('502 Gender lookup failed. Please try again. when the engine fails; never billed, nothing in billing_cache', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const original = providers(h).get('gender')!;
    providers(h).set('gender', failingProvider);

    const r = await lookup(h, path, a.key, { email: 'maria.rossi@example.com' });
    expect(r.statusCode).toBe(502);
    expect(json(r).error).toBe('Gender lookup failed. Please try again.');
    expectNoLeak(r.body);
    expect(r.body).not.toContain('exploded');
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(10);
    expect(await billed(h, a.id, 'maria.rossi@example.com')).toBe(false);
    expect((await h.engine.deps.billing.ledger(a.id)).filter((l) => l.reason === 'charge')).toEqual([]);

    // Once the engine is back, the address is a first lookup: charged once, not a "free repeat".
    providers(h).set('gender', original);
    expect(json(await lookup(h, path, a.key, { email: 'maria.rossi@example.com' }))).toMatchObject({ credits: 1 });
  });

  it('503 Gender lookup is temporarily unavailable when no gender provider is configured; not billed', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    providers(h).delete('gender');
    const r = await lookup(h, path, a.key, { email: 'maria.rossi@example.com' });
    expect(r.statusCode).toBe(503);
    expect(json(r).error).toBe('Gender lookup is temporarily unavailable');
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(10);
    expect(await billed(h, a.id, 'maria.rossi@example.com')).toBe(false);
  });
});

describe('one billing window for both paths, for all keys, and for bulk jobs', () => {
  it('the two paths share it, and so do the account\'s keys', async () => {
    const h = await cachedHarness();
    const a = await newAccount(h, { credits: 10 });
    const second = await addKey(h, a.id, 'readonly');
    expect(json(await lookup(h, PATHS[0], a.key, { email: 'lucia.garcia@example.com' })).credits).toBe(1);
    expect(json(await lookup(h, PATHS[1], second.key, { email: 'lucia.garcia@example.com' }))).toMatchObject({ credits: 0, cached: true });
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(9);
  });

  it('another account pays for its own first lookup, even when the answer is cached', async () => {
    const h = await cachedHarness();
    const a = await newAccount(h, { credits: 10 });
    const b = await newAccount(h, { credits: 10 });
    await lookup(h, PATHS[0], a.key, { email: 'hans.muller@example.com' });
    const forB = json(await lookup(h, PATHS[0], b.key, { email: 'hans.muller@example.com' }));
    expect(forB.credits).toBe(1);
    expect(forB.cached).toBe(true);
    expect((await h.engine.deps.billing.requireAccount(b.id)).credits).toBe(9);
  });

  it('concurrent lookups of one new address charge it once', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const answers = await Promise.all(Array.from({ length: 6 }, () => lookup(h, PATHS[0], a.key, { email: 'sofia.martin@example.com' })));
    expect(answers.every((r) => r.statusCode === 200)).toBe(true);
    expect(answers.map((r) => json(r).credits as number).reduce((x, y) => x + y, 0)).toBe(1);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(9);
  });

  it('an address charged in a bulk job is free here, and one looked up here is free in a later job', async () => {
    const h = await cachedHarness();
    const a = await newAccount(h, { credits: 100 });

    const job = json(await uploadCsv(h, a.key, 'email\nmaria.rossi@example.com\njohn.smith@example.com\n'));
    await runUntilDone(h, [job.id]);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(98);

    const here = json(await lookup(h, PATHS[1], a.key, { email: 'Maria.Rossi@example.com' }));
    expect(here).toMatchObject({ email: 'maria.rossi@example.com', credits: 0, cached: true });
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(98);

    expect(json(await lookup(h, PATHS[0], a.key, { email: 'giulia.bianchi@example.com' })).credits).toBe(1);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(97);
    const later = json(await uploadCsv(h, a.key, 'email\ngiulia.bianchi@example.com\nandrea.rossi@example.com\n'));
    await runUntilDone(h, [later.id]);

    const rows = await resultRecords((await streamToBuffer(await h.engine.jobService.openResult(later.id, 'all'))).toString('utf8'));
    expect(rows.find((r) => r.email === 'giulia.bianchi@example.com')).toMatchObject({ status: 'ok', credits: '0', cached: 'true' });
    expect(rows.find((r) => r.email === 'andrea.rossi@example.com')).toMatchObject({ status: 'ok', credits: '1' });
    expect(json(await h.app.inject({ method: 'GET', url: `/api/jobs/${later.id}`, headers: bearer(a.key) })).credits_used).toBe(1);
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(96);
  });
});
