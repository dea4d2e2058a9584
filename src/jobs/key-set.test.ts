import { describe, expect, it } from 'vitest';
import { KeySet } from './key-set.js';

describe('KeySet', () => {
  it('says a key is new once and a duplicate after, across growth', () => {
    const set = new KeySet(4);
    const keys = Array.from({ length: 50_000 }, (_, i) => `user${i}@example.com`);
    for (const key of keys) expect(set.add(key)).toBe(true);
    for (const key of keys) expect(set.add(key)).toBe(false);
    expect(set.size).toBe(keys.length);
  });

  it('tells apart keys that differ in one character or only in order', () => {
    const set = new KeySet();
    const keys = ['ab@x.io', 'ba@x.io', 'ab@x.io ', 'ac@x.io', '', 'a', 'aa', 'é@x.io', 'e@x.io'];
    expect(keys.map((k) => set.add(k))).toEqual(keys.map(() => true));
  });

  it('finds no collision among a million distinct keys', () => {
    const set = new KeySet();
    let fresh = 0;
    for (let i = 0; i < 1_000_000; i++) if (set.add(`person.${i.toString(36)}@example.org`)) fresh++;
    expect(fresh).toBe(1_000_000);
  });
});
