import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { EmailBreachRow } from '../../src/storage/records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { NOW, openTestStore, SINCE, type TestStore } from '../support/test-store.js';

const row = (email: string, breach: string, breachedAt: string | null, dataClasses: string[] = []): EmailBreachRow => ({ email, breach, breachedAt, dataClasses });

describe.each(TEST_STORES)('Store contract on %s: the email breach index', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  it("adds each (email, breach) once, keeping the first date and data classes, and gives an address's breaches by date (undated last), then name in byte order", async () => {
    const added = await store.emailBreaches.add([
      row('jane@example.com', 'LinkedIn', '2021-06-01', ['Email addresses', 'Passwords']),
      row('jane@example.com', 'adobe', '2013-10-04', ['Password hints']),
      row('jane@example.com', 'Collection #1', null),
      row('jane@example.com', 'Zynga', '2013-10-04', ['Usernames']),
      row('jane@example.com', 'adobe', '2019-01-01', ['Phone numbers']),
      row('bob@example.org', 'Yahoo', null, ['Names']),
    ]);
    expect(added).toBe(5);
    // A re-import of a held pair changes nothing; a new breach of a known address is a new row.
    expect(await store.emailBreaches.add([row('jane@example.com', 'LinkedIn', '2012-01-01', ['Names']), row('bob@example.org', 'Dropbox', '2012-07-01', ['Email addresses', 'Passwords'])])).toBe(1);
    expect(await store.emailBreaches.add([])).toBe(0);

    const records = await store.emailBreaches.records(['jane@example.com', 'bob@example.org', 'nobody@example.net']);
    expect([...records.keys()].sort()).toEqual(['bob@example.org', 'jane@example.com']);
    expect(records.get('jane@example.com')).toEqual([
      { breach: 'Zynga', breachedAt: '2013-10-04', dataClasses: ['Usernames'] },
      { breach: 'adobe', breachedAt: '2013-10-04', dataClasses: ['Password hints'] },
      { breach: 'LinkedIn', breachedAt: '2021-06-01', dataClasses: ['Email addresses', 'Passwords'] },
      { breach: 'Collection #1', breachedAt: null, dataClasses: [] },
    ]);
    expect(records.get('bob@example.org')).toEqual([
      { breach: 'Dropbox', breachedAt: '2012-07-01', dataClasses: ['Email addresses', 'Passwords'] },
      { breach: 'Yahoo', breachedAt: null, dataClasses: ['Names'] },
    ]);
    expect(await store.emailBreaches.records([])).toEqual(new Map());
    // The phone index is another table: an address never lands there.
    expect(await store.breaches.records(['jane@example.com'])).toEqual(new Map());
  });

  it('forgets the cached email-breach answers of the addresses an import changed, and only those', async () => {
    await store.emailBreaches.add([row('a@example.com', 'Adobe', '2013-10-04')]);
    for (const email of ['a@example.com', 'b@example.com', 'c@example.com']) await store.results.put('email_breaches', email, { breached: false }, NOW);
    await store.results.put('gender', 'b@example.com', { gender: 'unknown' }, NOW);
    await store.emailBreaches.add([row('a@example.com', 'Adobe', '2013-10-04'), row('b@example.com', 'Yahoo', null)]);
    const cached = await store.results.getMany('email_breaches', ['a@example.com', 'b@example.com', 'c@example.com'], SINCE);
    expect([...cached.keys()].sort()).toEqual(['a@example.com', 'c@example.com']);
    expect(await store.results.getMany('gender', ['b@example.com'], SINCE)).toEqual(new Map([['b@example.com', { gender: 'unknown' }]]));
  });

  it('keeps every pair of two imports that run at once, each pair once', async () => {
    const peer = await opened.openPeer();
    const batch = (from: number) => Array.from({ length: 200 }, (_, i) => row(`user${(from + i) % 300}@example.com`, `Breach ${(from + i) % 7}`, '2020-01-01', ['Passwords']));
    const [a, b] = await Promise.all([store.emailBreaches.add(batch(0)), peer.emailBreaches.add(batch(100))]);
    // 300 distinct pairs in all; the 100 both batches hold are stored by one of them only.
    expect(a + b).toBe(300);
    const records = await store.emailBreaches.records(Array.from({ length: 300 }, (_, i) => `user${i}@example.com`));
    expect([...records.values()].reduce((n, r) => n + r.length, 0)).toBe(300);
  });
});
