import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { SharedSemaphore, SlotHolder } from '../../src/lookups/shared-semaphore.js';
import { systemClock } from '../../src/shared/clock.js';
import type { LimitsPort } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { openTestStore, type TestStore } from '../support/test-store.js';

/**
 * Two holders on one store stand for two processes: they share nothing but the store's slots.
 * (The same bound with real worker processes: test/reliability/shared-limits.test.ts.)
 */
describe.each(TEST_STORES)('SharedSemaphore on %s', (kind) => {
  let opened: TestStore | undefined;
  const holders: SlotHolder[] = [];
  afterEach(async () => {
    for (const holder of holders.splice(0)) holder.close();
    await opened?.close();
    opened = undefined;
  });

  async function semaphores(size: number, count: number): Promise<{ limits: LimitsPort; list: SharedSemaphore[] }> {
    opened = await openTestStore(kind);
    const limits = opened.store.limits;
    const list = Array.from({ length: count }, () => new SharedSemaphore(holder(limits), systemClock, 'account:acc', size));
    return { limits, list };
  }

  function holder(slots: ConstructorParameters<typeof SlotHolder>[0]): SlotHolder {
    const made = new SlotHolder(slots, systemClock);
    holders.push(made);
    return made;
  }

  it('runs no more than size calls at once across holders, reaches size, and runs every call', async () => {
    const { list } = await semaphores(3, 2);
    let now = 0;
    let most = 0;
    const call = async () => {
      most = Math.max(most, ++now);
      await sleep(5);
      now--;
    };
    await Promise.all(list.flatMap((semaphore) => Array.from({ length: 25 }, () => semaphore.run(call))));
    expect(most).toBe(3);
    expect(now).toBe(0);
  });

  it('gives every slot back once no call wants it', async () => {
    const { limits, list } = await semaphores(4, 2);
    await Promise.all(list.flatMap((semaphore) => Array.from({ length: 6 }, () => semaphore.run(() => sleep(2)))));
    const deadline = Date.now() + 2_000;
    while ((await limits.heldSlots('account:acc', Date.now())) > 0 && Date.now() < deadline) await sleep(10);
    expect(await limits.heldSlots('account:acc', Date.now())).toBe(0);
  });

  it('fails the waiting calls with the store error instead of leaving them waiting', async () => {
    const down = new Error('database unreachable');
    opened = await openTestStore(kind);
    const limits = opened.store.limits;
    const unreachable = { takeSlots: () => Promise.reject(down), releaseSlots: limits.releaseSlots.bind(limits), renewSlots: limits.renewSlots.bind(limits) };
    const list = [new SharedSemaphore(holder(unreachable), systemClock, 'account:acc', 2)];
    const calls = [list[0]!.run(async () => 'ran'), list[0]!.run(async () => 'ran')];
    for (const call of calls) await expect(call).rejects.toBe(down);
  });
});
