import type { Clock } from '../../shared/clock.js';
import type { SharedRecords } from '../../shared/shared-records.js';

/**
 * Pacing of new connections to one MX host (issue 26, item 7): connections start at least
 * `intervalMs` apart, whichever process or machine opens them. The shared record `smtp-pace:<host>`
 * holds the next time a connection may start; each opener books the next free time under the
 * record's lock and waits for it, so openers queue in booking order without polling.
 */
export class HostPacer {
  constructor(
    private readonly records: SharedRecords,
    private readonly clock: Clock,
    private readonly intervalMs: number,
    private readonly sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  ) {}

  /**
   * Resolves when a new connection to `host` may start, with the time booked for it: bookings of one
   * host are at least the interval apart; a start may trail its booking by the store's reply.
   */
  async wait(host: string): Promise<number> {
    if (this.intervalMs <= 0) return this.clock.now();
    const interval = this.intervalMs;
    const at = await this.records.updateShared(`smtp-pace:${host.toLowerCase()}`, (value) => {
      // The time read under the record's lock: an opener that waited for the lock books from then.
      // A booking far in the future (a clock that jumped back) is not waited for longer than an interval.
      const now = this.clock.now();
      const booked = Math.min(Math.max(now, Number(value ?? 0) || 0), now + interval * 1_000);
      return { value: String(booked + interval), result: booked };
    });
    const wait = at - this.clock.now();
    if (wait > 0) await this.sleep(wait);
    return at;
  }
}
