import pLimit, { type LimitFunction } from 'p-limit';
import type { Clock } from '../../shared/clock.js';
import { SharedSemaphore, type SlotHolder } from '../shared-semaphore.js';

/** Sessions to one MX host at once: the good-citizen limit of issue 26, item 7. */
export interface HostLimiter {
  run<T>(host: string, call: () => Promise<T>): Promise<T>;
}

/**
 * Held in the store's shared slots (`smtp:<host>`), so that every worker on every machine on the
 * store together keeps to the limit: ten workers with a limit of 2 each would otherwise open 20
 * sessions to one small mail server, which is how a verifier gets its IP blocklisted.
 */
export class SharedHostLimiter implements HostLimiter {
  private readonly semaphores = new Map<string, SharedSemaphore>();

  constructor(
    private readonly holder: SlotHolder,
    private readonly clock: Clock,
    private readonly perHost: number,
  ) {}

  run<T>(host: string, call: () => Promise<T>): Promise<T> {
    const name = `smtp:${host.toLowerCase()}`;
    let semaphore = this.semaphores.get(name);
    if (!semaphore) this.semaphores.set(name, (semaphore = new SharedSemaphore(this.holder, this.clock, name, this.perHost)));
    return semaphore.run(call);
  }
}

/** Per process only: for a tool or test without a store. */
export class LocalHostLimiter implements HostLimiter {
  private readonly limits = new Map<string, LimitFunction>();

  constructor(private readonly perHost: number) {}

  run<T>(host: string, call: () => Promise<T>): Promise<T> {
    let limit = this.limits.get(host);
    if (!limit) this.limits.set(host, (limit = pLimit(this.perHost)));
    return limit(call);
  }
}
