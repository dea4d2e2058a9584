import { afterEach, describe, expect, it, vi } from 'vitest';
import { SEAL_SWEEP_MS } from '../../src/auth/key-store.js';
import { workerCommand } from '../../src/cli/worker-command.js';
import { FakeClock } from '../../src/shared/clock.js';
import { captureIo } from '../support/capture-io.js';
import { openTestEngine, storeEnv, TEST_STORES, type TestEngine } from '../support/test-engine.js';

/**
 * Issue 16, item 5 for deployments without a long-running API: a machine that runs only
 * `sluice worker` must drop sealed key copies once their reveal window ends, or a backup of its
 * data dir (or database) taken meanwhile gives up keys that nobody would ever reveal.
 */
describe.each(TEST_STORES)('a worker-only process on %s', (kind) => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  async function open(clock: FakeClock): Promise<TestEngine> {
    const store = await storeEnv(kind);
    cleanups.push(store.drop);
    const engine = await openTestEngine({ ...store.env, SLUICE_KEY_REVEAL_SECONDS: '900', SLUICE_WEBHOOK_SENDER: 'false' }, clock);
    cleanups.push(() => engine.close());
    return engine;
  }

  /** Runs `sluice worker` in this process; the returned function stops it as SIGTERM would. */
  function runWorker(engine: TestEngine): { stop: () => Promise<number> } {
    const before = new Set(process.listeners('SIGTERM'));
    const running = workerCommand(engine, [], captureIo().io);
    const handler = process.listeners('SIGTERM').find((listener) => !before.has(listener));
    if (!handler) throw new Error('the worker registered no SIGTERM handler');
    return {
      stop: async () => {
        process.removeListener('SIGTERM', handler);
        (handler as () => void)();
        return running;
      },
    };
  }

  it('drops a sealed key copy within SEAL_SWEEP_MS of its window ending, with no API running', async () => {
    // Only the interval is faked: the sweep's schedule is the test's, the worker's polling is real.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const clock = new FakeClock(Date.now());
    const engine = await open(clock);
    const account = await engine.deps.billing.createAccount({ email: `sweep-${kind}@example.com`, passwordHash: null, credits: 0, now: clock.now() });
    const old = await engine.auth.keys.create({ accountId: account.id, name: 'old', role: 'admin', now: clock.now() });
    clock.advance(800_000);
    const recent = await engine.auth.keys.create({ accountId: account.id, name: 'recent', role: 'admin', now: clock.now() });
    const sealedCopy = async (id: string) => (await engine.deps.store.keys.byId(id))!.sealed;

    const worker = runWorker(engine);
    clock.advance(101_000);
    // Past the first key's window; the start-up sweep ran before it ended.
    expect(await sealedCopy(old.key.id)).not.toBeNull();
    await vi.advanceTimersByTimeAsync(SEAL_SWEEP_MS);
    await vi.waitFor(async () => expect(await sealedCopy(old.key.id)).toBeNull());
    expect(await sealedCopy(recent.key.id)).not.toBeNull();
    expect(await engine.auth.keys.reveal(recent.key.id, clock.now())).toBe(recent.secret);

    expect(await worker.stop()).toBe(0);
  });

  it('drops copies whose window ended while no process ran, as soon as it starts', async () => {
    const clock = new FakeClock(Date.now());
    const engine = await open(clock);
    const account = await engine.deps.billing.createAccount({ email: `start-${kind}@example.com`, passwordHash: null, credits: 0, now: clock.now() });
    const old = await engine.auth.keys.create({ accountId: account.id, name: 'old', role: 'admin', now: clock.now() });
    clock.advance(901_000);
    expect((await engine.deps.store.keys.byId(old.key.id))!.sealed).not.toBeNull();

    const worker = runWorker(engine);
    await vi.waitFor(async () => expect((await engine.deps.store.keys.byId(old.key.id))!.sealed).toBeNull());
    expect(await worker.stop()).toBe(0);
  });
});
