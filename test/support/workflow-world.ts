import { Limiters } from '../../src/lookups/limiters.js';
import type { LookupOutcome, LookupProvider } from '../../src/lookups/lookup-provider.js';
import { afterEach, beforeEach } from 'vitest';
import { FakeClock } from '../../src/shared/clock.js';
import { silentLogger } from '../../src/shared/logger.js';
import type { Store, StoreKind } from '../../src/storage/store.js';
import type { WorkflowRecord } from '../../src/storage/workflow-records.js';
import { validateDefinition } from '../../src/workflows/definition.js';
import type { RunDriverDeps, WorkflowRunDriver } from '../../src/workflows/run-driver.js';
import { LEASE_MS, newAccount, NOW, openTestStore, type TestStore } from './test-store.js';

/** A gender provider that counts its calls and answers as `answer` says. */
export function fakeGender(answer: (key: string, call: number) => LookupOutcome<unknown> = (key) => ({ ok: true, result: { gender: 'female', email: key } })) {
  const provider = {
    kind: 'gender',
    name: 'fake-gender',
    maxBatch: 10,
    calls: 0,
    answer,
    async lookup(keys: readonly string[]) {
      provider.calls += 1;
      return keys.map((k) => provider.answer(k, provider.calls));
    },
  };
  return provider satisfies LookupProvider & { calls: number };
}

/** A run driver's dependencies over a test store, a fake clock and one provider. */
export function workflowDeps(store: Store, clock: FakeClock, provider: LookupProvider, over: Partial<RunDriverDeps> = {}): RunDriverDeps {
  return {
    store,
    providers: new Map([[provider.kind, provider]]),
    limiters: new Limiters({ accountConcurrency: 10, providerConcurrency: 10 }),
    clock,
    log: silentLogger(),
    leaseMs: LEASE_MS,
    retryBackoffMs: 1000,
    repeatFreeDays: 180,
    ...over,
  };
}

/** Ticks the driver until no run is due; how many ticks worked. */
export async function drain(driver: WorkflowRunDriver): Promise<number> {
  let ticks = 0;
  while (await driver.tick()) ticks += 1;
  return ticks;
}

/** A workflow with `steps`, stored directly (the checks of a save included). */
export function storeWorkflow(store: Store, accountId: string, steps: unknown[], id = 'wf1', status = 'active'): Promise<WorkflowRecord> {
  const def = validateDefinition({ name: 'Flow', steps });
  return store.workflows.create({ id, accountId, name: def.name, description: '', status, trigger: JSON.stringify(def.trigger), steps: JSON.stringify(def.steps), nextRunAt: null, now: NOW });
}

/** A one-step workflow that looks up `input.email`. */
export const LOOKUP_ONLY = [{ id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } }];

/** A fresh store with an account, a fake clock at NOW and a fake gender provider, for one test. */
export interface WorkflowWorld {
  opened: TestStore;
  store: Store;
  account: string;
  clock: FakeClock;
  provider: ReturnType<typeof fakeGender>;
}

/** Opens a WorkflowWorld on `kind` before each test (the account with 10 credits) and closes it after; read its fields inside tests. */
export function workflowWorld(kind: StoreKind): WorkflowWorld {
  const world = {} as WorkflowWorld;
  beforeEach(async () => {
    const opened = await openTestStore(kind);
    Object.assign(world, { opened, store: opened.store, account: (await newAccount(opened.store, 10)).id, clock: new FakeClock(NOW), provider: fakeGender() });
  });
  afterEach(() => world.opened.close());
  return world;
}
