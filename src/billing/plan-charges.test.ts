import { describe, expect, it } from 'vitest';
import { planCharges, type BillableItem } from './plan-charges.js';

const none = { has: () => false };
const billedOf = (...keys: string[]) => new Set(keys);

describe('planCharges', () => {
  it('pays for a row whole or not at all when the balance runs out inside it', () => {
    // Row 0 has two lookups, row 1 two more: a balance of 3 pays row 0 and not half of row 1.
    const items: BillableItem[] = [
      { kind: 0, key: 'a@x.test', row: 0 },
      { kind: 1, key: 'acme', row: 0 },
      { kind: 0, key: 'b@x.test', row: 1 },
      { kind: 1, key: 'globex', row: 1 },
    ];
    const plan = planCharges(2, items, [none, none], 3);
    expect(plan.unpaidRow).toBe(1);
    expect(plan.total).toBe(2);
    expect([...plan.charged[0]!]).toEqual(['a@x.test']);
    expect([...plan.charged[1]!]).toEqual(['acme']);
  });

  it.each([
    ['a balance of 0 pays for nothing', 0, 0, 0],
    ['a balance that covers every key pays for all', 10, undefined, 3],
    ['an unbounded balance pays for all', Number.POSITIVE_INFINITY, undefined, 3],
  ])('%s', (_name, balance, unpaidRow, total) => {
    const items: BillableItem[] = ['k1', 'k2', 'k3'].map((key, row) => ({ kind: 0, key, row }));
    const plan = planCharges(1, items, [none], balance);
    expect(plan.unpaidRow).toBe(unpaidRow);
    expect(plan.total).toBe(total);
    expect(plan.charged[0]!.size).toBe(total);
  });

  it('charges a key once per kind: a repeat in the batch or a key already billed is free, per kind', () => {
    const items: BillableItem[] = [
      { kind: 0, key: 'same', row: 0 },
      { kind: 1, key: 'same', row: 0 },
      { kind: 0, key: 'same', row: 1 },
      { kind: 0, key: 'paid', row: 2 },
      { kind: 1, key: 'paid', row: 2 },
    ];
    const plan = planCharges(2, items, [billedOf('paid'), none], 100);
    expect([...plan.charged[0]!]).toEqual(['same']);
    expect([...plan.charged[1]!]).toEqual(['same', 'paid']);
    expect(plan.total).toBe(3);
    expect(plan.unpaidRow).toBeUndefined();
  });

  it('does not count free repeats against the balance', () => {
    const items: BillableItem[] = [
      { kind: 0, key: 'paid-before', row: 0 },
      { kind: 0, key: 'new', row: 1 },
    ];
    const plan = planCharges(1, items, [billedOf('paid-before')], 1);
    expect(plan.unpaidRow).toBeUndefined();
    expect([...plan.charged[0]!]).toEqual(['new']);
  });
});
