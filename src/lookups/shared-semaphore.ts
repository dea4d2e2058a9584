import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../shared/clock.js';
import type { LimitsPort } from '../storage/store.js';

/**
 * How long a slot stays taken without a renewal. A process that dies holding slots keeps them from
 * the others this long at most; a live one renews every third of it.
 */
export const SLOT_LEASE_MS = 10_000;
/**
 * A slot taken this recently goes straight to the next call waiting in this process; an older one
 * goes back to the store, so that a busy process cannot keep an account's slots from the others.
 */
const HAND_OVER_MS = 1_000;
/** Between tries to take slots that other processes hold; jittered. */
const RETRY_MS = 20;

/**
 * This process's holder of shared slots: takes and gives them back through the store, and renews
 * the ones it holds while it holds any.
 */
export class SlotHolder {
  /** `host:pid:random`, like a worker's lease owner. */
  readonly id = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private held = 0;
  private renewal: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: Pick<LimitsPort, 'takeSlots' | 'releaseSlots' | 'renewSlots'>,
    private readonly clock: Clock,
    private readonly leaseMs = SLOT_LEASE_MS,
  ) {}

  async take(name: string, size: number, want: number): Promise<number[]> {
    const now = this.clock.now();
    const slots = await this.store.takeSlots({ name, size, want, holder: this.id, now, expiresAt: now + this.leaseMs });
    this.held += slots.length;
    if (this.held > 0) this.renewing();
    return slots;
  }

  give(name: string, slots: readonly number[]): void {
    this.held -= slots.length;
    if (this.held === 0) this.stopRenewing();
    // A slot the store could not take back runs out on its own; the call that held it is done.
    this.store.releaseSlots(name, this.id, slots).catch(() => undefined);
  }

  close(): void {
    this.stopRenewing();
  }

  private renewing(): void {
    if (this.renewal) return;
    this.renewal = setInterval(() => {
      // A renewal that fails is tried again at the next tick, a third of the lease later.
      this.store.renewSlots(this.id, this.clock.now() + this.leaseMs).catch(() => undefined);
    }, this.leaseMs / 3);
    this.renewal.unref();
  }

  private stopRenewing(): void {
    clearInterval(this.renewal);
    this.renewal = undefined;
  }
}

interface Waiter {
  resolve: (slot: Taken) => void;
  reject: (error: unknown) => void;
}

interface Taken {
  slot: number;
  takenAt: number;
}

/**
 * A slot no call wants stays here this long before it goes back to the store, all such slots in
 * one statement: the next batch of the same chunk, a commit later, finds its slots here instead of
 * taking them again. On SQLite every take and give is a write that queues on the file's one lock
 * beside the checkpoints, so this saves most of them. A slot let go because it is old goes back at
 * once: held back until the flush, it was lost to every call for 50 ms (a remote run at 64 in
 * flight fell from 80% of the ideal pace to 66%).
 */
const LINGER_MS = 50;

/**
 * One process's side of a semaphore of `size` slots that every process on the store shares: a call
 * runs while it holds one of the slots. Across all processes no more than `size` calls hold slots
 * at once, as long as each renews what it holds; a process frozen past SLOT_LEASE_MS may see its
 * slots go to others while its own calls still run.
 */
export class SharedSemaphore {
  /** Slots this process holds of this semaphore: in use, or idle. */
  private held = 0;
  private idle: Taken[] = [];
  private readonly waiters: Waiter[] = [];
  private taking = false;
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly holder: SlotHolder,
    private readonly clock: Clock,
    readonly name: string,
    readonly size: number,
  ) {}

  async run<T>(call: () => Promise<T>): Promise<T> {
    const taken = this.freshIdle() ?? (await this.wait());
    try {
      return await call();
    } finally {
      this.release(taken);
    }
  }

  private wait(): Promise<Taken> {
    return new Promise<Taken>((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.fill();
    });
  }

  /** An idle slot young enough to keep, or undefined. */
  private freshIdle(): Taken | undefined {
    const now = this.clock.now();
    while (this.idle.length > 0) {
      const taken = this.idle.pop()!;
      if (this.fresh(taken, now)) return taken;
      this.letGo(taken);
    }
    return undefined;
  }

  private release(taken: Taken): void {
    if (!this.fresh(taken, this.clock.now())) {
      this.letGo(taken);
      this.fill();
      return;
    }
    const next = this.waiters.shift();
    if (next) next.resolve(taken);
    else {
      this.idle.push(taken);
      this.scheduleFlush();
    }
  }

  /** A slot taken this recently may go to another call here; an older one goes back to the store. */
  private fresh(taken: Taken, now: number): boolean {
    return now - taken.takenAt < HAND_OVER_MS;
  }

  private letGo(taken: Taken): void {
    this.held--;
    this.holder.give(this.name, [taken.slot]);
  }

  private scheduleFlush(): void {
    if (this.flushTimer) return;
    this.flushTimer = setTimeout(() => {
      this.flushTimer = undefined;
      this.flush();
    }, LINGER_MS);
    this.flushTimer.unref();
  }

  /** Gives back every idle slot, in one statement. */
  private flush(): void {
    const slots = this.idle.map((t) => t.slot);
    this.held -= slots.length;
    this.idle = [];
    if (slots.length > 0) this.holder.give(this.name, slots);
    this.fill();
  }

  /** Takes slots from the store for the calls waiting here, one taker at a time. */
  private fill(): void {
    if (this.taking || this.waiters.length === 0 || this.held >= this.size) return;
    this.taking = true;
    void this.takeWhileWaiting().finally(() => {
      this.taking = false;
    });
  }

  private async takeWhileWaiting(): Promise<void> {
    for (;;) {
      const want = Math.min(this.waiters.length, this.size - this.held);
      // Nothing to take for: a release hands its slot over, or lets it go and calls fill again.
      if (want <= 0) return;
      let slots: number[];
      try {
        slots = await this.holder.take(this.name, this.size, want);
      } catch (error: unknown) {
        for (const waiter of this.waiters.splice(0)) waiter.reject(error);
        return;
      }
      const takenAt = this.clock.now();
      this.held += slots.length;
      for (const slot of slots) {
        const waiter = this.waiters.shift();
        if (waiter) waiter.resolve({ slot, takenAt });
        else {
          this.idle.push({ slot, takenAt });
          this.scheduleFlush();
        }
      }
      if (slots.length < want) await sleep(RETRY_MS / 2 + Math.random() * RETRY_MS);
    }
  }
}
