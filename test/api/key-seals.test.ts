import { afterEach, describe, expect, it, vi } from 'vitest';
import { SEAL_SWEEP_MS } from '../../src/auth/key-store.js';
import { FakeClock } from '../../src/shared/clock.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 16, item 5: the sealed copy behind the reveal endpoint is what a copy of the data dir gives
 * up, so it must be gone from the store once the reveal window ends, whether or not anyone ever
 * asks to reveal the key. Read through the store port, as a backup would see the rows.
 */
describe.each(TEST_STORES)('sealed copies of API keys on %s', (kind) => {
  const drops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    vi.useRealTimers();
    await closeHarnesses();
    for (const drop of drops.splice(0)) await drop();
  });

  async function open(clock: FakeClock, env: Record<string, string> = {}): Promise<ApiHarness> {
    const store = await storeEnv(kind);
    drops.push(store.drop);
    return openApiHarness({ ...store.env, SLUICE_KEY_REVEAL_SECONDS: '900', ...env }, clock);
  }

  const sealedCopy = async (h: ApiHarness, id: string) => (await h.engine.deps.store.keys.byId(id))!.sealed;

  it('are dropped by the running API once their window ends, with no request at all', async () => {
    // Only the interval is faked: the sweep's schedule is under the test's control, nothing else.
    vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
    const clock = new FakeClock(Date.now());
    const h = await open(clock);
    const a = await newAccount(h);
    const old = await addKey(h, a.id, 'admin', 'old');
    expect(await sealedCopy(h, old.keyId)).not.toBeNull();

    clock.advance(800_000);
    const recent = await addKey(h, a.id, 'tech', 'recent');
    clock.advance(101_000);
    // Past the first key's window; nothing has been asked of the API since.
    expect(await sealedCopy(h, old.keyId)).not.toBeNull();
    await vi.advanceTimersByTimeAsync(SEAL_SWEEP_MS);

    expect(await sealedCopy(h, old.keyId)).toBeNull();
    expect(await sealedCopy(h, a.keyId)).toBeNull();
    // A key still inside its window keeps its copy, and still reveals.
    expect(await sealedCopy(h, recent.keyId)).not.toBeNull();
    const shown = await h.app.inject({ method: 'GET', url: `/api/account/keys/reveal?id=${recent.keyId}`, headers: bearer(a.key) });
    expect(json(shown)).toEqual({ key: recent.key });
  });

  it('are dropped when keys are listed or created, and at start, past their window', async () => {
    const clock = new FakeClock(Date.now());
    const h = await open(clock);
    const a = await newAccount(h);
    const b = await newAccount(h);
    const listedLate = await addKey(h, a.id, 'tech', 'listed late');

    clock.advance(901_000);
    const list = await h.app.inject({ method: 'GET', url: '/api/account/keys', headers: bearer(b.key) });
    expect(list.statusCode).toBe(200);
    // Another account's listing sweeps too: the copies are a risk to the whole database.
    expect(await sealedCopy(h, listedLate.keyId)).toBeNull();
    expect(await sealedCopy(h, a.keyId)).toBeNull();

    const c = await newAccount(h);
    clock.advance(901_000);
    await addKey(h, b.id, 'tech', 'creates');
    expect(await sealedCopy(h, c.keyId)).toBeNull();

    // A process started after the window (the copy was left by one that stopped) sweeps at start.
    const d = await newAccount(h);
    clock.advance(901_000);
    const restarted = await openApiHarness(h.engine.env, clock);
    expect(await sealedCopy(restarted, d.keyId)).toBeNull();
  });

  it('are never written when reveals are switched off', async () => {
    const h = await open(new FakeClock(Date.now()), { SLUICE_KEY_REVEAL_SECONDS: '0' });
    const a = await newAccount(h);
    expect(await sealedCopy(h, a.keyId)).toBeNull();
    const r = await h.app.inject({ method: 'GET', url: `/api/account/keys/reveal?id=${a.keyId}`, headers: bearer(a.key) });
    expect(r.statusCode).toBe(410);
  });
});
