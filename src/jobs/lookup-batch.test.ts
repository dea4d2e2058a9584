import { describe, expect, it } from 'vitest';
import { Limiters } from '../lookups/limiters.js';
import type { LookupOutcome, LookupProvider } from '../lookups/lookup-provider.js';
import { lookupBatch } from './lookup-batch.js';

/** A provider that answers after a tick, records its peak concurrency, and fails on cue. */
function provider(options: { maxBatch: number; failures?: Map<string, number>; name?: string; retryable?: boolean }) {
  let inFlight = 0;
  const stats = { peak: 0, calls: 0 };
  const p: LookupProvider<string> = {
    kind: 'test',
    name: options.name ?? 'test-provider',
    maxBatch: options.maxBatch,
    async lookup(keys) {
      stats.calls++;
      inFlight++;
      stats.peak = Math.max(stats.peak, inFlight);
      await new Promise((r) => setTimeout(r, 2));
      inFlight--;
      return keys.map((key): LookupOutcome<string> => {
        const left = options.failures?.get(key) ?? 0;
        if (left > 0) {
          options.failures!.set(key, left - 1);
          return { ok: false, retryable: options.retryable ?? true, code: 'upstream_502', message: 'bad gateway' };
        }
        return { ok: true, result: key.toUpperCase() };
      });
    },
  };
  return { p, stats };
}

const keys = Array.from({ length: 40 }, (_, i) => `k${i}`);

describe('lookupBatch', () => {
  it('answers every key once, in provider-sized slices', async () => {
    const { p, stats } = provider({ maxBatch: 7 });
    const answers = await lookupBatch(keys, { accountId: 'a', provider: p, limiters: new Limiters({ accountConcurrency: 100, providerConcurrency: 100 }) });
    expect([...answers.keys()].sort()).toEqual([...keys].sort());
    expect(answers.get('k3')).toEqual({ ok: true, result: 'K3' });
    expect(stats.calls).toBe(Math.ceil(40 / 7));
  });

  it('keeps an account to its concurrency limit', async () => {
    const { p, stats } = provider({ maxBatch: 1 });
    await lookupBatch(keys, { accountId: 'a', provider: p, limiters: new Limiters({ accountConcurrency: 3, providerConcurrency: 100 }) });
    expect(stats.peak).toBe(3);
  });

  it('keeps a provider to its limit across accounts', async () => {
    const { p, stats } = provider({ maxBatch: 1 });
    const limiters = new Limiters({ accountConcurrency: 10, providerConcurrency: 4 });
    await Promise.all(['a', 'b', 'c'].map((accountId) => lookupBatch(keys, { accountId, provider: p, limiters })));
    expect(stats.peak).toBe(4);
  });

  it('retries retryable failures and returns the answer once the provider recovers', async () => {
    const { p } = provider({ maxBatch: 10, failures: new Map([['k1', 2]]) });
    const answers = await lookupBatch(keys, { accountId: 'a', provider: p, limiters: new Limiters({ accountConcurrency: 10, providerConcurrency: 10 }), attempts: 3, backoffMs: 1 });
    expect(answers.get('k1')).toEqual({ ok: true, result: 'K1' });
  });

  it('gives up after the last attempt and reports the failure as data', async () => {
    const { p } = provider({ maxBatch: 10, failures: new Map([['k1', 5]]) });
    const answers = await lookupBatch(keys, { accountId: 'a', provider: p, limiters: new Limiters({ accountConcurrency: 10, providerConcurrency: 10 }), attempts: 3, backoffMs: 1 });
    expect(answers.get('k1')).toMatchObject({ ok: false, code: 'upstream_502' });
    expect(answers.get('k2')).toEqual({ ok: true, result: 'K2' });
  });

  it('does not retry a final failure', async () => {
    const failures = new Map([['k1', 1]]);
    const { p } = provider({ maxBatch: 10, failures, retryable: false });
    const answers = await lookupBatch(['k1'], { accountId: 'a', provider: p, limiters: new Limiters({ accountConcurrency: 10, providerConcurrency: 10 }), attempts: 3, backoffMs: 1 });
    expect(answers.get('k1')).toMatchObject({ ok: false });
  });

  it('turns a provider that throws into retryable lookup_failed outcomes', async () => {
    const p: LookupProvider = { kind: 't', name: 'thrower', maxBatch: 5, lookup: async () => Promise.reject(new Error('socket hang up')) };
    const answers = await lookupBatch(['x', 'y'], { accountId: 'a', provider: p, limiters: new Limiters({ accountConcurrency: 1, providerConcurrency: 1 }), attempts: 2, backoffMs: 1 });
    expect(answers.get('x')).toMatchObject({ ok: false, retryable: true, code: 'lookup_failed' });
  });
});
