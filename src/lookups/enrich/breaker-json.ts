import { CircuitBreaker, type CircuitBreakerOptions } from '../remote/circuit-breaker.js';

export type GetJson = (url: string, signal?: AbortSignal) => Promise<unknown>;

/**
 * The remote-provider pattern for the enrich report's HTTP sources (RDAP registries, Gravatar):
 * one circuit breaker per origin, so that a registry that is down is not asked again, each ask
 * paying its time-out, for every report until it is back. An open breaker fails at once; the
 * report leaves the field out, as for any failure.
 */
export function withBreakers(get: GetJson, options: CircuitBreakerOptions = {}): GetJson {
  const breakers = new Map<string, CircuitBreaker>();
  return async (url, signal) => {
    const origin = new URL(url).origin;
    let breaker = breakers.get(origin);
    if (breaker === undefined) {
      breaker = new CircuitBreaker({ ...options, name: `enrich:${origin}` });
      breakers.set(origin, breaker);
    }
    if (!(await breaker.tryAcquire())) throw new Error('breaker_open');
    try {
      const value = await get(url, signal);
      await breaker.recordSuccess();
      return value;
    } catch (e: unknown) {
      if (signal?.aborted) await breaker.release();
      else await breaker.recordFailure();
      throw e;
    }
  };
}
