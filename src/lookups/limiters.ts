import pLimit, { type LimitFunction } from 'p-limit';
import type { Clock } from '../shared/clock.js';
import { LOOKUP_OUTCOMES, lookupOutcome, type Metrics } from '../shared/metrics.js';
import { SharedSemaphore, SlotHolder } from './shared-semaphore.js';
import type { LookupProvider } from './lookup-provider.js';

export interface LimitersOptions {
  /** Lookup requests in flight per account, across all its jobs. */
  accountConcurrency: number;
  /** Lookup requests in flight per provider (what that service is allowed to see from us). */
  providerConcurrency: number;
  /**
   * Requests in flight to one remote service from this process: its connection pool's size. A
   * request waiting in the pool's queue would spend its time-out there.
   */
  connectionsPerProcess?: number;
  /**
   * The store's slots, so that both limits hold across every process and machine on the store.
   * Without them (a tool or test on its own) they hold within this process.
   */
  slots?: { holder: SlotHolder; clock: Clock };
  /** Each provider call's duration and the calls in flight, measured inside the limiters (not the wait for a slot). */
  metrics?: Pick<Metrics, 'lookupDuration' | 'lookupsInFlight'>;
}

/**
 * One limiter per account and one per provider. A call takes the account's slot first, then the
 * provider's: never a limiter inside itself, which is how p-limit deadlocks.
 *
 * Requests to a remote service are counted across processes, through the store's slots. Lookups an
 * embedded engine answers in this process spend no request and hold no shared slot: they are
 * limited per process, which keeps the store off their path.
 */
export class Limiters {
  private readonly local = new Map<string, LimitFunction>();
  private readonly shared = new Map<string, SharedSemaphore>();

  constructor(private readonly options: LimitersOptions) {}

  run<T extends readonly { ok: boolean }[]>(accountId: string, provider: Pick<LookupProvider, 'name' | 'answersLocally'>, lookup: () => Promise<T>): Promise<T> {
    const { accountConcurrency, providerConcurrency, connectionsPerProcess, metrics } = this.options;
    const call = metrics ? () => measured(metrics, provider.name, lookup) : lookup;
    const inProcess = provider.answersLocally === true;
    const account = this.limiter(`account:${accountId}`, accountConcurrency, inProcess);
    const service = this.limiter(`provider:${provider.name}`, providerConcurrency, inProcess);
    if (inProcess || connectionsPerProcess === undefined) return account(() => service(call));
    // The process's connections before the shared slot: a call waiting for a connection holds no slot.
    const connection = this.limiter(`connections:${provider.name}`, connectionsPerProcess, true);
    return account(() => connection(() => service(call)));
  }

  /** Stops renewing slots; a call still running gives its slot back when it ends. */
  close(): void {
    this.options.slots?.holder.close();
  }

  private limiter(name: string, size: number, inProcess: boolean): <T>(call: () => Promise<T>) => Promise<T> {
    const slots = this.options.slots;
    if (inProcess || slots === undefined) {
      let limit = this.local.get(name);
      if (!limit) this.local.set(name, (limit = pLimit(size)));
      return limit;
    }
    let semaphore = this.shared.get(name);
    if (!semaphore) this.shared.set(name, (semaphore = new SharedSemaphore(slots.holder, slots.clock, name, size)));
    return (call) => semaphore.run(call);
  }
}

/** One provider call, timed and counted in flight; one histogram observation per call, not per key. */
async function measured<T extends readonly { ok: boolean }[]>(metrics: NonNullable<LimitersOptions['metrics']>, provider: string, call: () => Promise<T>): Promise<T> {
  const end = metrics.lookupDuration.startTimer({ provider });
  metrics.lookupsInFlight.inc({ provider });
  try {
    const outcomes = await call();
    end({ outcome: lookupOutcome(outcomes) });
    return outcomes;
  } catch (e: unknown) {
    end({ outcome: LOOKUP_OUTCOMES.error });
    throw e;
  } finally {
    metrics.lookupsInFlight.dec({ provider });
  }
}
