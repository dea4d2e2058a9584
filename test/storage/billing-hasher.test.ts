import { createHmac, hkdfSync } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { BillingHasher } from '../../src/storage/billing-hasher.js';
import { BillingKeys } from '../../src/storage/billing-key.js';

const SEAL_KEY = Buffer.alloc(32, 9);
const opened: BillingKeys[] = [];
afterEach(async () => {
  for (const names of opened.splice(0)) await names.close();
});
const fresh = (): BillingKeys => {
  const names = new BillingKeys(SEAL_KEY);
  opened.push(names);
  return names;
};

/** Keys a CSV cell can hold: the separator the thread's message uses, NUL, astral and lone surrogates. */
const AWKWARD = ['plain@x.io', 'two\nlines@x.io', 'nul\0inside', '', '\n', 'emoji 📧@x.io', 'lone \ud800 surrogate', 'é@x.io'];
const many = (n: number): string[] => Array.from({ length: n }, (_, i) => AWKWARD[i % AWKWARD.length] + String(i));

describe('hashing billing keys on a thread of their own', () => {
  it('gives the names the formula gives, for every key a cell can hold, in order', async () => {
    const keys = [...AWKWARD, ...many(500)];
    const billingKey = Buffer.from(hkdfSync('sha256', SEAL_KEY, Buffer.alloc(0), 'sluice billing-cache v1', 32));
    const expected = keys.map((key) => createHmac('sha256', billingKey).update(`gender\0${key}`).digest().subarray(0, 16).toString('hex'));
    const names = fresh();
    const hashes = await names.hashMany('gender', keys);
    expect(hashes.map((h) => h.toString('hex'))).toEqual(expected);
    // A second process's names (hashed on its own thread) are the same; another kind's are not.
    expect((await fresh().hashMany('gender', keys)).map((h) => h.toString('hex'))).toEqual(expected);
    expect((await names.hashMany('company', keys)).map((h) => h.toString('hex'))).not.toContain(expected[0]);
  });

  it('remembers what the thread hashed, so that the checkpoint hashes nothing again', async () => {
    const names = fresh();
    const keys = many(200);
    const fromThread = await names.hashMany('gender', keys);
    // The very same Buffers: `hash` answered from the memo, not by hashing again.
    keys.forEach((key, i) => expect(names.hash('gender', key)).toBe(fromThread[i]));
  });

  it('a thread that dies fails the batch it held; the next batch gets a new thread', async () => {
    const names = fresh();
    const keys = many(300);
    const expected = (await fresh().hashMany('phone_breaches', keys)).map((h) => h.toString('hex'));
    const hasher = (names as unknown as { hasher: BillingHasher }).hasher;
    await hasher.hash('gender', many(80));
    const lost = hasher.hash('gender', many(100));
    await (hasher as unknown as { worker: { terminate(): Promise<number> } }).worker.terminate();
    await expect(lost).rejects.toThrow(/exited/);
    expect((await names.hashMany('phone_breaches', keys)).map((h) => h.toString('hex'))).toEqual(expected);
  });

  it('hashes on the calling thread when the thread cannot answer', async () => {
    const names = fresh();
    const keys = many(300);
    const expected = (await fresh().hashMany('gender', keys)).map((h) => h.toString('hex'));
    const hasher = (names as unknown as { hasher: BillingHasher }).hasher;
    hasher.hash = () => Promise.reject(new Error('no thread'));
    expect((await names.hashMany('gender', keys)).map((h) => h.toString('hex'))).toEqual(expected);
  });
});
