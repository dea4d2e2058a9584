/**
 * A rolling one-minute window per account, shared by all of its keys. It keeps the times of the
 * requests it let through (at most `limit` per account), so the reset time is exact: the moment
 * the oldest of them leaves the window.
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

export class RateLimiter {
  private readonly windows = new Map<string, number[]>();

  constructor(private readonly windowMs = 60_000) {}

  take(accountId: string, limit: number, now: number): RateDecision {
    const times = this.windows.get(accountId) ?? [];
    const from = now - this.windowMs;
    let drop = 0;
    while (drop < times.length && times[drop]! <= from) drop++;
    if (drop > 0) times.splice(0, drop);
    const allowed = times.length < limit;
    if (allowed) times.push(now);
    this.windows.set(accountId, times);
    const oldest = times[0] ?? now;
    const resetMs = oldest + this.windowMs;
    return {
      allowed,
      limit,
      remaining: Math.max(0, limit - times.length),
      resetAt: Math.ceil(resetMs / 1000),
      // Counted from the same whole second as the reset, so now + Retry-After = X-RateLimit-Reset.
      retryAfter: allowed ? 0 : Math.max(1, Math.ceil(resetMs / 1000) - Math.floor(now / 1000)),
    };
  }
}
