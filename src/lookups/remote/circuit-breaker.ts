import { systemClock, type Clock } from '../../shared/clock.js';

export const BREAKER_STATES = {
  closed: 'closed',
  open: 'open',
  halfOpen: 'half-open',
} as const;

export type BreakerState = (typeof BREAKER_STATES)[keyof typeof BREAKER_STATES];

export interface CircuitBreakerOptions {
  /** Consecutive failed calls that open the breaker. */
  failureThreshold?: number;
  /** How long the breaker stays open before it lets one trial call through. */
  openMs?: number;
  clock?: Clock;
}

/**
 * Closed, open, half-open. A provider that is down would otherwise be asked again for every batch
 * of every job, each ask paying its own retries and time-outs; open, the breaker answers at once and
 * the provider gets room to come back. Half-open lets exactly one trial call through: its success
 * closes the breaker, its failure opens it for another `openMs`.
 *
 * Callers ask `tryAcquire()` before a call and report it with `recordSuccess()`, `recordFailure()`,
 * or `release()` for a call that ended without telling anything about the provider (an abort).
 */
export class CircuitBreaker {
  readonly failureThreshold: number;
  readonly openMs: number;
  private readonly clock: Clock;
  private failures = 0;
  private openedAt: number | undefined;
  /** When the half-open trial call started; undefined while none is out. */
  private trialStartedAt: number | undefined;

  constructor(options: CircuitBreakerOptions = {}) {
    this.failureThreshold = options.failureThreshold ?? 5;
    this.openMs = options.openMs ?? 5_000;
    this.clock = options.clock ?? systemClock;
    if (!(this.failureThreshold >= 1) || !(this.openMs >= 0)) throw new RangeError('failureThreshold must be >= 1 and openMs >= 0');
  }

  state(): BreakerState {
    if (this.openedAt === undefined) return BREAKER_STATES.closed;
    return this.clock.now() - this.openedAt >= this.openMs ? BREAKER_STATES.halfOpen : BREAKER_STATES.open;
  }

  /** True when a call may go out now. In half-open, true for one caller until it reports. */
  tryAcquire(): boolean {
    const state = this.state();
    if (state === BREAKER_STATES.closed) return true;
    if (state === BREAKER_STATES.open) return false;
    const now = this.clock.now();
    // A trial whose caller never reported (a bug, a lost promise) must not keep the breaker shut forever.
    if (this.trialStartedAt !== undefined && now - this.trialStartedAt < this.openMs) return false;
    this.trialStartedAt = now;
    return true;
  }

  recordSuccess(): void {
    this.failures = 0;
    this.openedAt = undefined;
    this.trialStartedAt = undefined;
  }

  recordFailure(): void {
    const now = this.clock.now();
    if (this.openedAt !== undefined) {
      // A failed trial, or a call that went out before the breaker opened: open for a full period again.
      this.openedAt = now;
      this.trialStartedAt = undefined;
      return;
    }
    this.failures++;
    if (this.failures >= this.failureThreshold) this.openedAt = now;
  }

  /** Ends a call without a verdict on the provider, freeing the half-open trial slot. */
  release(): void {
    this.trialStartedAt = undefined;
  }
}
