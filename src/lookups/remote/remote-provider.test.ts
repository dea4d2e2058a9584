import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { FakeClock } from '../../shared/clock.js';
import { EmbeddedGenderEngine, type GenderResult } from '../gender/embedded-gender-engine.js';
import { CircuitBreaker } from './circuit-breaker.js';
import { startProviderSimulator, type ProviderSimulator, type SimulatorOptions } from './provider-simulator.js';
import { parseRetryAfter } from '../../shared/retry-after.js';
import { lookupBatch } from '../../jobs/lookup-batch.js';
import { Limiters } from '../limiters.js';
import type { LookupOutcome } from '../lookup-provider.js';
import { RemoteLookupProvider, type RemoteProviderOptions } from './remote-provider.js';

const KEYS = ['mary.smith@example.com', 'john@example.org', 'andrea.rossi@example.it', 'xyz123@example.com', 'info@example.com'];

// The embedded table takes a moment to build on first use; on a loaded machine that first answer
// could outlast a request's time-out and turn into a retry that the request counts would see.
beforeAll(async () => {
  await embedded(KEYS);
});

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()));
});

async function setup(sim: Partial<SimulatorOptions> = {}, options: Partial<RemoteProviderOptions> = {}) {
  const simulator = await startProviderSimulator({ latencyMs: 5, ...sim });
  closers.push(() => simulator.close());
  const provider = new RemoteLookupProvider<GenderResult>({ kind: 'gender', baseUrl: simulator.url, timeoutMs: 5_000, connections: 4, ...options });
  closers.push(() => provider.close());
  return { simulator, provider };
}

async function embedded(keys: readonly string[]) {
  return new EmbeddedGenderEngine().lookup(keys);
}

function everyKey(code: string, retryable: boolean, keys = KEYS) {
  return keys.map(() => expect.objectContaining({ ok: false, code, retryable }));
}

/** The provider through the engine's one retry layer, answers in key order. */
async function withRetries(provider: RemoteLookupProvider<GenderResult>, options: { attempts?: number; maxRetryAfterMs?: number } = {}): Promise<LookupOutcome<unknown>[]> {
  const answers = await lookupBatch(KEYS, { accountId: 'a', provider, limiters: new Limiters({ accountConcurrency: 10, providerConcurrency: 10 }), backoffMs: 1, ...options });
  return KEYS.map((key) => answers.get(key)!);
}

async function timed<T>(work: Promise<T>): Promise<{ value: T; ms: number }> {
  const started = performance.now();
  const value = await work;
  return { value, ms: performance.now() - started };
}

describe('RemoteLookupProvider against the provider simulator', () => {
  it('answers a batch in one request exactly as the embedded engine does', async () => {
    const { simulator, provider } = await setup();
    expect(await provider.lookup(KEYS)).toEqual(await embedded(KEYS));
    expect(simulator.stats).toMatchObject({ requests: 1, keys: KEYS.length, byStatus: { 200: 1 } });
  });

  it('reuses one keep-alive connection for requests one after another', async () => {
    const { simulator, provider } = await setup({}, { connections: 1 });
    for (let i = 0; i < 10; i++) await provider.lookup(KEYS);
    expect(simulator.stats.requests).toBe(10);
    expect(simulator.stats.connections).toBe(1);
  });

  it('sends the configured Authorization header', async () => {
    const { provider } = await setup({ requireAuth: 'Bearer s3cret' }, { authHeader: 'Bearer s3cret' });
    expect(await provider.lookup(KEYS)).toEqual(await embedded(KEYS));
  });

  it('when the service answers 401, every key fails for good with lookup_rejected and the request is not repeated', async () => {
    const { simulator, provider } = await setup({ requireAuth: 'Bearer s3cret' }, { authHeader: 'Bearer wrong' });
    const outcomes = await provider.lookup(KEYS);
    expect(outcomes).toEqual(everyKey('lookup_rejected', false));
    expect(outcomes[0]).not.toHaveProperty('message', expect.stringContaining('wrong'));
    expect(simulator.stats).toMatchObject({ requests: 1, byStatus: { 401: 1 } });
  });

  it('when the service does not know the kind (404), every key fails for good with lookup_rejected', async () => {
    const { simulator } = await setup();
    const phone = new RemoteLookupProvider({ kind: 'phone', baseUrl: simulator.url, timeoutMs: 2_000, connections: 1 });
    closers.push(() => phone.close());
    expect(await phone.lookup(['+14155550100'])).toEqual(everyKey('lookup_rejected', false, ['+14155550100']));
  });

  it('when the service answers 429 with Retry-After, the retry waits that long and then answers ok', async () => {
    const { simulator, provider } = await setup({ rateLimitEvery: 2, retryAfterSeconds: 1 });
    await provider.lookup(KEYS); // request 1 passes; request 2 is the one rate limited
    const { value, ms } = await timed(withRetries(provider));
    expect(value).toEqual(await embedded(KEYS));
    expect(simulator.stats.byStatus).toEqual({ 200: 2, 429: 1 });
    expect(ms).toBeGreaterThanOrEqual(990);
    expect(ms).toBeLessThan(2_500);
  });

  it('passes the Retry-After on with the failure, and the retry cuts one longer than maxRetryAfterMs to that cap', async () => {
    const { provider } = await setup({ rateLimitEvery: 2, retryAfterSeconds: 60 });
    await provider.lookup(KEYS);
    expect((await provider.lookup(KEYS))[0]).toMatchObject({ ok: false, retryable: true, retryAfterMs: 60_000 });
    await provider.lookup(KEYS);
    const { value, ms } = await timed(withRetries(provider, { maxRetryAfterMs: 50 }));
    expect(value).toEqual(await embedded(KEYS));
    expect(ms).toBeLessThan(1_000);
  });

  it('when the service answers 502, the retry asks again and a later success answers ok', async () => {
    // With seed 7 the PRNG draws 0.01, 0.06, 0.98: two 502s, then an answer.
    const { simulator, provider } = await setup({ errorRate: 0.5, seed: 7 });
    expect(await withRetries(provider)).toEqual(await embedded(KEYS));
    expect(simulator.stats.byStatus).toEqual({ 502: 2, 200: 1 });
  });

  it('makes one request per call and leaves trying again to its caller', async () => {
    const { simulator, provider } = await setup({ errorRate: 1 });
    expect(await provider.lookup(KEYS)).toEqual(everyKey('lookup_failed', true));
    expect(simulator.stats.requests).toBe(1);
  });

  it('when every try answers 502, every key is a retryable lookup_failed after `attempts` requests, not attempts times more', async () => {
    const { simulator, provider } = await setup({ errorRate: 1 });
    expect(await withRetries(provider, { attempts: 3 })).toEqual(everyKey('lookup_failed', true));
    expect(simulator.stats.requests).toBe(3);
  });

  it('when the service is down (503), every key is a retryable provider_unavailable', async () => {
    const { simulator, provider } = await setup({ down: true });
    expect(await withRetries(provider, { attempts: 2 })).toEqual(everyKey('provider_unavailable', true));
    expect(simulator.stats.byStatus).toEqual({ 503: 2 });
  });

  it('opens the breaker after the threshold, sends nothing while it is open, and closes it on a successful half-open trial', async () => {
    const clock = new FakeClock();
    const breaker = new CircuitBreaker({ failureThreshold: 5, openMs: 1_000, clock });
    const { simulator, provider } = await setup({ down: true }, { breaker });

    for (let i = 0; i < 4; i++) expect(await provider.lookup(KEYS)).toEqual(everyKey('provider_unavailable', true));
    expect(await breaker.state()).toBe('closed');
    expect(await provider.lookup(KEYS)).toEqual(everyKey('provider_unavailable', true)); // the fifth failure opens it
    expect(await breaker.state()).toBe('open');
    expect(simulator.stats.requests).toBe(5);

    expect(await provider.lookup(KEYS)).toEqual(everyKey('provider_unavailable', true));
    simulator.set({ down: false });
    expect(await provider.lookup(KEYS)).toEqual(everyKey('provider_unavailable', true));
    expect(simulator.stats.requests).toBe(5);

    clock.advance(1_000);
    expect(await breaker.state()).toBe('half-open');
    expect(await provider.lookup(KEYS)).toEqual(await embedded(KEYS));
    expect(await breaker.state()).toBe('closed');
    expect(simulator.stats.requests).toBe(6);
  });

  it('when the half-open trial finds the service still down, opens again after that one request', async () => {
    const clock = new FakeClock();
    const breaker = new CircuitBreaker({ failureThreshold: 1, openMs: 1_000, clock });
    const { simulator, provider } = await setup({ down: true }, { breaker });
    expect(await withRetries(provider, { attempts: 3 })).toEqual(everyKey('provider_unavailable', true));
    expect(simulator.stats.requests).toBe(1);
    clock.advance(1_000);
    expect(await provider.lookup(KEYS)).toEqual(everyKey('provider_unavailable', true));
    expect(simulator.stats.requests).toBe(2);
    expect(await breaker.state()).toBe('open');
  });

  it('when the service is slower than timeoutMs, every key is a retryable lookup_failed without waiting for it', async () => {
    const { simulator, provider } = await setup({ latencyMs: 5_000 }, { timeoutMs: 100 });
    const { value, ms } = await timed(withRetries(provider, { attempts: 2 }));
    expect(value).toEqual(everyKey('lookup_failed', true));
    expect(value[0]).toMatchObject({ message: expect.stringContaining('no answer within 100 ms') });
    // Not exactly 2: on a loaded machine the second try can time out before the server has read it.
    expect(simulator.stats.requests).toBeLessThanOrEqual(2);
    expect(simulator.stats.byStatus).toEqual({});
    expect(ms).toBeLessThan(2_000);
  });

  it('when the caller aborts, returns retryable failures at once instead of throwing', async () => {
    const { provider } = await setup({ latencyMs: 5_000 });
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const { value, ms } = await timed(provider.lookup(KEYS, controller.signal));
    expect(value).toEqual(everyKey('lookup_failed', true));
    expect(ms).toBeLessThan(2_000);
  });

  it('keeps at most `connections` requests in flight under 50 concurrent lookups', async () => {
    const { simulator, provider } = await setup({ latencyMs: 10 }, { connections: 4 });
    const answers = await Promise.all(Array.from({ length: 50 }, () => provider.lookup(KEYS)));
    const expected = await embedded(KEYS);
    for (const answer of answers) expect(answer).toEqual(expected);
    expect(simulator.stats.requests).toBe(50);
    expect(simulator.stats.maxInFlight).toBeLessThanOrEqual(4);
    expect(simulator.stats.maxInFlight).toBeGreaterThan(1);
    expect(simulator.stats.connections).toBeLessThanOrEqual(4);
  });

  it('answers no keys without a request', async () => {
    const { simulator, provider } = await setup();
    expect(await provider.lookup([])).toEqual([]);
    expect(simulator.stats.requests).toBe(0);
  });
});

describe('RemoteLookupProvider reading 200 answers', () => {
  async function serving(body: string) {
    let requests = 0;
    const server = http.createServer((_req, res) => {
      requests++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(body);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const provider = new RemoteLookupProvider({ kind: 'gender', baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, timeoutMs: 2_000, connections: 1 });
    closers.push(async () => {
      await provider.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    });
    return { provider, requests: () => requests };
  }

  it.each([
    ['a body that is not JSON', 'not json'],
    ['no results array', '{"answers":[]}'],
    ['fewer results than keys', '{"results":[{"ok":true,"result":{}}]}'],
    ['a result that is neither ok nor a failure', '{"results":[{"ok":true,"result":{}},{"ok":"maybe"}]}'],
  ])('treats %s as a retryable lookup_failed for every key', async (_name, body) => {
    const { provider, requests } = await serving(body);
    expect(await provider.lookup(['a@x.com', 'b@x.com'])).toEqual(everyKey('lookup_failed', true, ['a@x.com', 'b@x.com']));
    expect(requests()).toBe(1);
  });

  it("passes the service's own per-key failures through as they are", async () => {
    const { provider } = await serving('{"results":[{"ok":true,"result":{"gender":"male"}},{"ok":false,"code":"invalid_email","retryable":false,"message":"no"}]}');
    expect(await provider.lookup(['a@x.com', 'b@x.com'])).toEqual([
      { ok: true, result: { gender: 'male' } },
      { ok: false, code: 'invalid_email', retryable: false, message: 'no' },
    ]);
  });
});

describe('parseRetryAfter', () => {
  const now = Date.UTC(2026, 0, 1, 12, 0, 0);
  it.each([
    ['2', 2_000],
    [' 0 ', 0],
    ['Thu, 01 Jan 2026 12:00:05 GMT', 5_000],
    ['Thu, 01 Jan 2026 11:59:00 GMT', 0],
    ['soon', undefined],
    ['-1', undefined],
    ['2026-01-01', undefined],
    ['', undefined],
    [undefined, undefined],
  ])('reads %j as %j ms', (value, expected) => {
    expect(parseRetryAfter(value, now)).toBe(expected);
  });
});
