import { systemClock, type Clock } from '../../shared/clock.js';
import { ProcessRecords, type SharedRecords } from '../../shared/shared-records.js';

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
  /** Where the breaker's state lives: the store's shared records, so that every process sees one breaker. */
  records?: SharedRecords;
  /** The shared record's name: one breaker per provider. */
  name?: string;
  /** How long a process trusts what it last read before it reads again. */
  viewMs?: number;
}

/** The breaker's state as every process shares it. No record: closed, no failures. */
interface BreakerRecord {
  failures: number;
  openedAt?: number;
  /** When the half-open trial call started; absent while none is out. */
  trialStartedAt?: number;
}

const CLOSED: BreakerRecord = { failures: 0 };

/**
 * Closed, open, half-open. A provider that is down would otherwise be asked again for every batch
 * of every job, each ask paying its own retries and time-outs; open, the breaker answers at once and
 * the provider gets room to come back. Half-open lets exactly one trial call through: its success
 * closes the breaker, its failure opens it for another `openMs`.
 *
 * The state is one shared record, so the breaker is one for all processes and machines on a store:
 * failures count together, and half-open lets one trial through across all of them (the claim is
 * made under the record's lock). A process reads the record again at most every `viewMs` (100 ms)
 * while it sees the breaker closed, so a breaker opened elsewhere stops this process's calls
 * within that time; every change it makes itself it sees at once.
 *
 * Callers ask `tryAcquire()` before a call and report it with `recordSuccess()`, `recordFailure()`,
 * or `release()` for a call that ended without telling anything about the provider (an abort).
 */
export class CircuitBreaker {
  readonly failureThreshold: number;
  readonly openMs: number;
  private readonly clock: Clock;
  private readonly records: SharedRecords;
  private readonly name: string;
  private readonly viewMs: number;
  private view: { record: BreakerRecord; readAt: number } | undefined;

  constructor(options: CircuitBreakerOptions = {}) {
    this.failureThreshold = options.failureThreshold ?? 5;
    this.openMs = options.openMs ?? 5_000;
    this.clock = options.clock ?? systemClock;
    this.records = options.records ?? new ProcessRecords();
    this.name = `breaker:${options.name ?? 'provider'}`;
    this.viewMs = options.viewMs ?? 100;
    if (!(this.failureThreshold >= 1) || !(this.openMs >= 0)) throw new RangeError('failureThreshold must be >= 1 and openMs >= 0');
  }

  /** The state as the store holds it now. */
  async state(): Promise<BreakerState> {
    return this.stateOf(await this.read());
  }

  /** True when a call may go out now. In half-open, true for one caller, in any process, until it reports. */
  async tryAcquire(): Promise<boolean> {
    const now = this.clock.now();
    const seen = this.view !== undefined && now - this.view.readAt < this.viewMs ? this.view.record : await this.read();
    const state = this.stateOf(seen);
    if (state === BREAKER_STATES.closed) return true;
    if (state === BREAKER_STATES.open) return false;
    return this.change((record) => {
      if (this.stateOf(record) !== BREAKER_STATES.halfOpen) return { record, result: this.stateOf(record) === BREAKER_STATES.closed };
      // A trial whose caller never reported (a bug, a killed process) must not keep the breaker shut forever.
      if (record.trialStartedAt !== undefined && now - record.trialStartedAt < this.openMs) return { record, result: false };
      return { record: { ...record, trialStartedAt: now }, result: true };
    });
  }

  async recordSuccess(): Promise<void> {
    // The common case, a healthy provider, costs no write.
    if (this.view !== undefined && isClosed(this.view.record)) return;
    await this.change(() => ({ record: CLOSED, result: undefined }));
  }

  /** Resolves to the state the failure left, so that the caller need not read it again. */
  async recordFailure(): Promise<BreakerState> {
    const now = this.clock.now();
    return this.change((record) => {
      // A failed trial, or a call that went out before the breaker opened: open for a full period again.
      const next = record.openedAt !== undefined ? { failures: record.failures, openedAt: now } : this.counted(record.failures + 1, now);
      return { record: next, result: this.stateOf(next) };
    });
  }

  private counted(failures: number, now: number): BreakerRecord {
    return failures >= this.failureThreshold ? { failures, openedAt: now } : { failures };
  }

  /** Ends a call without a verdict on the provider, freeing the half-open trial slot. */
  async release(): Promise<void> {
    await this.change((record) => ({ record: { failures: record.failures, ...(record.openedAt === undefined ? {} : { openedAt: record.openedAt }) }, result: undefined }));
  }

  private stateOf(record: BreakerRecord): BreakerState {
    if (record.openedAt === undefined) return BREAKER_STATES.closed;
    return this.clock.now() - record.openedAt >= this.openMs ? BREAKER_STATES.halfOpen : BREAKER_STATES.open;
  }

  private async read(): Promise<BreakerRecord> {
    const raw = await this.records.readShared(this.name);
    const record = raw === undefined ? CLOSED : (JSON.parse(raw) as BreakerRecord);
    this.view = { record, readAt: this.clock.now() };
    return record;
  }

  private async change<T>(next: (record: BreakerRecord) => { record: BreakerRecord; result: T }): Promise<T> {
    const { record, result } = await this.records.updateShared(this.name, (raw) => {
      const changed = next(raw === undefined ? CLOSED : (JSON.parse(raw) as BreakerRecord));
      return { value: isClosed(changed.record) ? undefined : JSON.stringify(changed.record), result: changed };
    });
    this.view = { record, readAt: this.clock.now() };
    return result;
  }
}

function isClosed(record: BreakerRecord): boolean {
  return record.failures === 0 && record.openedAt === undefined && record.trialStartedAt === undefined;
}
