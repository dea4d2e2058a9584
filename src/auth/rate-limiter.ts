import type { SharedRecords } from '../shared/shared-records.js';

/**
 * A rolling one-minute window per account, shared by all of its keys and by every API process on
 * the store: the window is one shared record per account, changed under the store's lock.
 *
 * The record counts requests per whole second, at most 61 numbers however high the limit. A request
 * let through in second S counts until second S + 61 begins, so any 60 seconds, wherever they
 * start, hold at most `limit` requests across all processes; the price is that a request may wait
 * up to one second longer than a log of exact times would make it.
 */
export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Unix seconds when a request slot frees up (X-RateLimit-Reset is absolute, per the spec). */
  resetAt: number;
  /** Seconds to wait, on a refusal. */
  retryAfter: number;
}

/** [unix second, requests let through in it], oldest first. */
type Window = [number, number][];

export class RateLimiter {
  /** Seconds a request counts for, its own included: 61 for a 60-second window. */
  private readonly spanSeconds: number;

  constructor(
    private readonly records: SharedRecords,
    windowMs = 60_000,
  ) {
    this.spanSeconds = Math.ceil(windowMs / 1000) + 1;
  }

  take(accountId: string, limit: number, now: number): Promise<RateDecision> {
    const second = Math.floor(now / 1000);
    return this.records.updateShared(`rate:${accountId}`, (stored) => {
      const window = (stored === undefined ? [] : (JSON.parse(stored) as Window)).filter(([s]) => s > second - this.spanSeconds);
      const used = window.reduce((n, [, count]) => n + count, 0);
      const allowed = used < limit;
      if (allowed) {
        const last = window.at(-1);
        if (last?.[0] === second) last[1]++;
        else window.push([second, 1]);
      }
      const resetAt = (window[0]?.[0] ?? second) + this.spanSeconds;
      const decision: RateDecision = {
        allowed,
        limit,
        remaining: Math.max(0, limit - used - (allowed ? 1 : 0)),
        resetAt,
        // Counted from the same whole second as the reset, so now + Retry-After = X-RateLimit-Reset.
        retryAfter: allowed ? 0 : Math.max(1, resetAt - second),
      };
      return { value: window.length === 0 ? undefined : JSON.stringify(window), result: decision };
    });
  }
}
