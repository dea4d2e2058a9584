import { afterEach, describe, expect, it } from 'vitest';
import { lookupBatch } from '../../src/jobs/lookup-batch.js';
import { Limiters } from '../../src/lookups/limiters.js';
import { PasswordBreachProvider } from '../../src/lookups/password/password-breach-provider.js';
import { CircuitBreaker } from '../../src/lookups/remote/circuit-breaker.js';
import { parseRange, RemotePasswordRange } from '../../src/lookups/remote/remote-password-range.js';
import { generatedHashes, sha1Hex } from '../support/password-hashes.js';
import { startRangeFake } from '../support/range-provider-fake.js';

const BREACHED = ['password', 'letmein', 'correct horse battery staple'].map((p) => ({ hash: sha1Hex(p), count: p.length * 1000 }));
const HASHES = [...generatedHashes(2_000), ...BREACHED];

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function setup(breaker?: CircuitBreaker) {
  const fake = await startRangeFake(HASHES);
  closers.push(fake.close);
  const source = new RemotePasswordRange({ baseUrl: `${fake.url}/`, timeoutMs: 2_000, connections: 2, ...(breaker ? { breaker } : {}) });
  const provider = new PasswordBreachProvider(source);
  closers.push(() => provider.close());
  return { fake, source, provider };
}

const limiters = () => new Limiters({ accountConcurrency: 10, providerConcurrency: 10 });

describe('the remote range provider against a range service fake on loopback', () => {
  it('finds breached passwords with their counts, ignores the padding, and sends nothing but 5-hex prefixes', async () => {
    const { fake, provider } = await setup();
    const clean = [sha1Hex('a password nobody has used 8c1f'), sha1Hex('another unused one 55e0')];
    const keys = [...BREACHED.map((b) => b.hash), ...clean, HASHES[7]!.hash];
    const outcomes = await provider.lookup(keys);
    expect(outcomes).toEqual([
      ...BREACHED.map((b) => ({ ok: true, result: { breached: true, count: b.count, source: 'remote_range', prefix: b.hash.slice(0, 5) } })),
      ...clean.map((hash) => ({ ok: true, result: { breached: false, count: 0, source: 'remote_range', prefix: hash.slice(0, 5) } })),
      { ok: true, result: { breached: true, count: HASHES[7]!.count, source: 'remote_range', prefix: HASHES[7]!.hash.slice(0, 5) } },
    ]);
    expect(fake.requests.length).toBe(new Set(keys.map((k) => k.slice(0, 5))).size);
    for (const request of fake.requests) {
      expect(request.method).toBe('GET');
      expect(request.path).toMatch(/^\/range\/[0-9A-F]{5}$/);
      expect(request.headers['add-padding']).toBe('true');
      // Nothing past the prefix, in any case, anywhere in what was sent.
      for (const key of keys) expect(request.raw.toUpperCase()).not.toContain(key.slice(5, 15));
      for (const plain of ['password', 'letmein', 'correct horse']) expect(request.raw).not.toContain(plain);
    }
  });

  it('a padded row (count 0) whose suffix matches is no breach', () => {
    expect(parseRange('0018A45C4D1DEF81644B54AB7F969B88D65:0\r\n00D4F6E8FA6EECAD2A3AA415EEC418D38EC:2\r\n')).toEqual([{ suffix: '00D4F6E8FA6EECAD2A3AA415EEC418D38EC', count: 2 }]);
    expect(parseRange('00D4F6E8FA6EECAD2A3AA415EEC418D38EC:two')).toBe('answered a line that is not SUFFIX:COUNT');
    expect(parseRange('<html>')).toBe('answered a line that is not SUFFIX:COUNT');
  });

  it('a 429 with Retry-After and a 502 are tried again by lookupBatch alone; a 404 is final; a garbled answer retryable', async () => {
    const { fake, provider } = await setup();
    const key = BREACHED[0]!.hash;
    fake.failNext({ status: 429, retryAfter: '0' }, { status: 502 });
    const answers = await lookupBatch([key], { accountId: 'a', provider, limiters: limiters(), backoffMs: 1 });
    expect(answers.get(key)).toMatchObject({ ok: true, result: { breached: true } });
    expect(fake.requests.length).toBe(3);

    fake.failNext({ status: 404 });
    expect(await provider.lookup([key])).toEqual([expect.objectContaining({ ok: false, retryable: false, code: 'lookup_rejected' })]);
    fake.failNext({ status: 200, body: 'not a range' });
    expect(await provider.lookup([key])).toEqual([expect.objectContaining({ ok: false, retryable: true, code: 'lookup_failed' })]);
    fake.failNext({ status: 503, retryAfter: '7' });
    expect(await provider.lookup([key])).toEqual([expect.objectContaining({ ok: false, retryable: true, code: 'provider_unavailable', retryAfterMs: 7_000 })]);
  });

  it('opens the breaker after repeated failures and then sends nothing at all', async () => {
    const { fake, provider } = await setup(new CircuitBreaker({ failureThreshold: 2, openMs: 60_000 }));
    fake.failNext({ status: 500 }, { status: 500 });
    const key = BREACHED[1]!.hash;
    await provider.lookup([key]);
    await provider.lookup([key]);
    const sent = fake.requests.length;
    expect(await provider.lookup([key])).toEqual([expect.objectContaining({ ok: false, code: 'provider_unavailable' })]);
    expect(fake.requests.length).toBe(sent);
  });

  it('refuses to send anything that is not 5 hex digits', async () => {
    const { fake, source } = await setup();
    for (const prefix of ['ABCD', 'ABCDEF', '../x', 'ABCDG', `${BREACHED[0]!.hash}`]) {
      expect(await source.range(prefix)).toMatchObject({ ok: false, code: 'invalid_prefix', retryable: false });
    }
    expect(fake.requests).toEqual([]);
  });
});
