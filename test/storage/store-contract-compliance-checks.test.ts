import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { DAY_MS, newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';

describe.each(TEST_STORES)('Store contract on %s: compliance checks', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  it('opens a provisional check, finds the latest in the window, settles it once and reads the answer back', async () => {
    const a = await newAccount(store);
    const b = await newAccount(store);
    expect(await store.complianceChecks.latest(a.id, 'h1', 0)).toBeUndefined();
    const old = await store.complianceChecks.open(a.id, 'h1', NOW - 200 * DAY_MS);
    const id = await store.complianceChecks.open(a.id, 'h1', NOW);
    expect(id).toBeGreaterThan(old);
    expect(await store.complianceChecks.latest(a.id, 'h1', NOW - DAY_MS)).toEqual({ id, createdAt: NOW, settledAt: null, answer: null });
    // Outside the window only the old one; another account or address sees none.
    expect(await store.complianceChecks.latest(a.id, 'h1', NOW - 300 * DAY_MS)).toMatchObject({ id });
    expect(await store.complianceChecks.latest(b.id, 'h1', 0)).toBeUndefined();
    expect(await store.complianceChecks.latest(a.id, 'h2', 0)).toBeUndefined();
    await store.complianceChecks.settle(id, { verdict: 'allowed', laws: [{ id: 'can_spam' }] }, NOW + 5);
    // A second settle (a racing repeat) keeps the first answer.
    await store.complianceChecks.settle(id, { verdict: 'do_not_email' }, NOW + 9);
    expect(await store.complianceChecks.latest(a.id, 'h1', NOW - DAY_MS)).toEqual({ id, createdAt: NOW, settledAt: NOW + 5, answer: { verdict: 'allowed', laws: [{ id: 'can_spam' }] } });
  });
});
