import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';

describe.each(TEST_STORES)('Store contract on %s: workflow secrets', (kind) => {
  let opened: TestStore;
  let store: Store;
  let a: string;
  let b: string;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    a = (await newAccount(store)).id;
    b = (await newAccount(store)).id;
  });
  afterEach(() => opened.close());

  it('creates, replaces (handing back the replaced data key), lists by name without values, reads, and removes', async () => {
    expect(await store.workflowSecrets.put({ accountId: a, name: 'TOKEN', sealed: 'sealed-1', keyName: 'wfsecret-1', now: NOW })).toEqual({ created: true, replacedKey: undefined });
    expect(await store.workflowSecrets.put({ accountId: a, name: 'ALPHA', sealed: 'sealed-a', keyName: 'wfsecret-a', now: NOW + 1 })).toEqual({ created: true, replacedKey: undefined });
    expect(await store.workflowSecrets.put({ accountId: a, name: 'TOKEN', sealed: 'sealed-2', keyName: 'wfsecret-2', now: NOW + 5 })).toEqual({ created: false, replacedKey: 'wfsecret-1' });
    expect(await store.workflowSecrets.list(a)).toEqual([
      { name: 'ALPHA', createdAt: NOW + 1, updatedAt: NOW + 1 },
      { name: 'TOKEN', createdAt: NOW, updatedAt: NOW + 5 },
    ]);
    expect(await store.workflowSecrets.sealed(a, 'TOKEN')).toEqual({ sealed: 'sealed-2', keyName: 'wfsecret-2' });
    expect(await store.workflowSecrets.remove(a, 'TOKEN')).toBe('wfsecret-2');
    expect(await store.workflowSecrets.remove(a, 'TOKEN')).toBeUndefined();
    expect(await store.workflowSecrets.sealed(a, 'TOKEN')).toBeUndefined();
    expect((await store.workflowSecrets.list(a)).map((s) => s.name)).toEqual(['ALPHA']);
  });

  it('keeps accounts apart: one account\'s name is not another\'s', async () => {
    await store.workflowSecrets.put({ accountId: a, name: 'TOKEN', sealed: 'sealed-a', keyName: 'wfsecret-a', now: NOW });
    expect(await store.workflowSecrets.list(b)).toEqual([]);
    expect(await store.workflowSecrets.sealed(b, 'TOKEN')).toBeUndefined();
    expect(await store.workflowSecrets.remove(b, 'TOKEN')).toBeUndefined();
    expect(await store.workflowSecrets.put({ accountId: b, name: 'TOKEN', sealed: 'sealed-b', keyName: 'wfsecret-b', now: NOW })).toEqual({ created: true, replacedKey: undefined });
    expect(await store.workflowSecrets.sealed(a, 'TOKEN')).toEqual({ sealed: 'sealed-a', keyName: 'wfsecret-a' });
  });
});
