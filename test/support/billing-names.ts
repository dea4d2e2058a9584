import type { Store } from '../../src/storage/store.js';

/** What `chargedKeys` answers for these keys: the billing cache's names, sorted (it keeps no key). */
export function paidNames(store: Store, kind: string, keys: readonly string[]): string[] {
  return keys.map((key) => store.billing.keyName(kind, key)).sort();
}
