import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chargeLedgerId } from '../../src/storage/ledger-ids.js';
import type { OutboxEvent } from '../../src/storage/records.js';
import type { LookupCommit, Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { batch, claimChunk, DAY_MS, newAccount, NOW, openTestStore, processingJob, SINCE, subscribe, type TestStore } from '../support/test-store.js';
import { paidNames } from '../support/billing-names.js';

describe.each(TEST_STORES)('Store contract on %s: billing', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  describe('accounts', () => {
    it('opens an account with its grant as one ledger line, and reads it back', async () => {
      const account = await store.billing.createAccount({ id: 'acc_1', email: 'Ann@Example.com', passwordHash: 'hash', credits: 25, now: NOW });
      expect(account).toEqual({ id: 'acc_1', email: 'Ann@Example.com', credits: 25, status: 'active', rateLimit: null, createdAt: NOW });
      expect(await store.billing.account('acc_1')).toEqual(account);
      expect(await store.billing.requireAccount('acc_1')).toEqual(account);
      expect((await store.billing.ledger('acc_1')).map(({ id, ...line }) => [id.startsWith('crd_'), line])).toEqual([
        [true, { accountId: 'acc_1', delta: 25, reason: 'grant', kind: null, jobId: null, createdAt: NOW }],
      ]);
      const empty = await store.billing.createAccount({ credits: 0, now: NOW + 1 });
      expect(empty).toMatchObject({ email: null, credits: 0 });
      expect(empty.id).not.toBe('acc_1');
      expect(await store.billing.ledger(empty.id)).toEqual([]);
      expect((await store.billing.accounts()).map((a) => a.id)).toEqual(['acc_1', empty.id]);
    });

    it('refuses a taken id, or a taken email in any case (account_exists, 409), and writes nothing', async () => {
      await store.billing.createAccount({ id: 'acc_1', email: 'ann@example.com', credits: 5, now: NOW });
      await expect(() => store.billing.createAccount({ id: 'acc_1', credits: 5, now: NOW })).rejects.toMatchObject({ code: 'account_exists', statusCode: 409 });
      await expect(() => store.billing.createAccount({ id: 'acc_2', email: 'ANN@example.COM', credits: 5, now: NOW })).rejects.toMatchObject({ code: 'account_exists', statusCode: 409 });
      expect(await store.billing.account('acc_2')).toBeUndefined();
      expect((await store.billing.accounts()).map((a) => a.id)).toEqual(['acc_1']);
      expect(await store.billing.ledger('acc_1')).toHaveLength(1);
      expect(await store.billing.ledger('acc_2')).toEqual([]);
    });

    it('finds login credentials by email in any case', async () => {
      await store.billing.createAccount({ id: 'acc_1', email: 'Ann@Example.com', passwordHash: 'scrypt$abc', credits: 0, now: NOW });
      expect(await store.billing.credentials('ann@EXAMPLE.com')).toEqual({ id: 'acc_1', passwordHash: 'scrypt$abc', status: 'active' });
      expect(await store.billing.credentials('bob@example.com')).toBeUndefined();
    });

    it('sets status and rate limit, and knows no account it was never given (account_not_found, 404)', async () => {
      await newAccount(store, 0, 'acc_1');
      expect(await store.billing.setStatus('acc_1', 'suspended')).toMatchObject({ status: 'suspended' });
      expect(await store.billing.setRateLimit('acc_1', 120)).toMatchObject({ status: 'suspended', rateLimit: 120 });
      expect(await store.billing.setRateLimit('acc_1', null)).toMatchObject({ rateLimit: null });
      expect(await store.billing.credentials('nobody@example.com')).toBeUndefined();
      expect(await store.billing.account('acc_missing')).toBeUndefined();
      for (const call of [
        () => store.billing.requireAccount('acc_missing'),
        () => store.billing.setStatus('acc_missing', 'active'),
        () => store.billing.setRateLimit('acc_missing', 5),
        () => store.billing.addCredits('acc_missing', 5, 'topup', NOW),
        () => store.billing.available('acc_missing'),
      ]) {
        await expect(call).rejects.toMatchObject({ code: 'account_not_found', statusCode: 404 });
      }
    });
  });

  describe('credits and the ledger', () => {
    it('adds whole positive credits with one ledger line each, in time order (ties by id), and refuses anything else', async () => {
      await newAccount(store, 0, 'acc_1');
      await store.billing.addCredits('acc_1', 5, 'topup', NOW + 3);
      await store.billing.addCredits('acc_1', 7, 'grant', NOW + 1);
      await store.billing.addCredits('acc_1', 1, 'topup', NOW + 2);
      await store.billing.addCredits('acc_1', 2, 'topup', NOW + 2);
      expect(await store.billing.addCredits('acc_1', 3, 'topup', NOW + 2)).toMatchObject({ credits: 18 });
      for (const amount of [0, -1, 1.5, Number.NaN, 2 ** 53]) {
        await expect(() => store.billing.addCredits('acc_1', amount, 'topup', NOW)).rejects.toMatchObject({ code: 'bad_argument', statusCode: 400 });
      }
      const ledger = await store.billing.ledger('acc_1');
      const ties = ledger.filter((l) => l.createdAt === NOW + 2).map((l) => l.id);
      expect(ties).toEqual([...ties].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
      expect(ledger.map((l) => l.createdAt)).toEqual([NOW + 1, NOW + 2, NOW + 2, NOW + 2, NOW + 3]);
      expect(ledger.map((l) => l.delta).reduce((a, b) => a + b)).toBe(18);
      expect((await store.billing.requireAccount('acc_1')).credits).toBe(18);
    });

    it("names the keys a job paid for (by their billing-cache names), sorted: those whose last charge was the job's", async () => {
      const account = await newAccount(store, 20);
      const first = await processingJob(store, account.id, 'job_1', [5]);
      const lease = await claimChunk(store, first.id, 0);
      await store.jobs.commitBatch(batch({ jobId: first.id, accountId: account.id, chunkIndex: 0, lease, cursor: 0, rows: 3 }, { charges: { keys: [['b@x.com', 'a@x.com', 'C@x.com', 'é@x.com']] } }));
      expect(await store.billing.chargedKeys(account.id, first.id)).toEqual(paidNames(store, 'gender', ['C@x.com', 'a@x.com', 'b@x.com', 'é@x.com']));
      // Outside the window a@x.com is charged again, by the second job, which now holds it.
      await store.jobs.transition(first.id, 'cancelled', { now: NOW + 1 });
      const later = NOW + 200 * DAY_MS;
      const second = await processingJob(store, account.id, 'job_2', [5], later);
      const lease2 = await claimChunk(store, second.id, 0, 'worker-b', later);
      await store.jobs.commitBatch(batch({ jobId: second.id, accountId: account.id, chunkIndex: 0, lease: lease2, cursor: 0, rows: 1 }, { charges: { keys: [['a@x.com']], since: later - 180 * DAY_MS }, now: later }));
      expect(await store.billing.chargedKeys(account.id, first.id)).toEqual(paidNames(store, 'gender', ['C@x.com', 'b@x.com', 'é@x.com']));
      expect(await store.billing.chargedKeys(account.id, second.id)).toEqual(paidNames(store, 'gender', ['a@x.com']));
      expect(await store.billing.chargeCountForJob(first.id)).toBe(4);
      expect(await store.billing.chargeCountForJob(second.id)).toBe(1);
      expect(await store.billing.chargeCountForJob('job_none')).toBe(0);
      expect((await store.billing.requireAccount(account.id)).credits).toBe(15);
    });

    it('counts a key as freshly billed only when it was charged after `since`, per account and kind', async () => {
      const account = await newAccount(store, 20);
      const other = await newAccount(store, 20);
      const job = await processingJob(store, account.id, 'job_1', [5]);
      const lease = await claimChunk(store, job.id, 0);
      await store.jobs.commitBatch(batch({ jobId: job.id, accountId: account.id, chunkIndex: 0, lease, cursor: 0, rows: 2 }, { charges: { keys: [['k1', 'k2']] }, now: NOW }));
      expect(await store.billing.freshlyBilled(account.id, 'gender', ['k1', 'k2', 'k3'], NOW - 1)).toEqual(new Set(['k1', 'k2']));
      expect(await store.billing.freshlyBilled(account.id, 'gender', ['k1'], NOW)).toEqual(new Set());
      expect(await store.billing.freshlyBilled(account.id, 'company', ['k1'], SINCE)).toEqual(new Set());
      expect(await store.billing.freshlyBilled(other.id, 'gender', ['k1'], SINCE)).toEqual(new Set());
      expect(await store.billing.freshlyBilled(account.id, 'gender', [], SINCE)).toEqual(new Set());
    });
  });

  describe('reservations', () => {
    it("grants a chunk what the balance covers beside the account's other reservations, replacing its own", async () => {
      const account = await newAccount(store, 10);
      const other = await newAccount(store, 3);
      await processingJob(store, account.id, 'job_1', [5, 5]);
      await processingJob(store, account.id, 'job_2', [5, 5]);
      await processingJob(store, other.id, 'job_3', [5]);
      expect(await store.billing.reserve(account.id, 'job_1', 0, 4)).toBe(4);
      expect(await store.billing.reserve(account.id, 'job_1', 1, 4)).toBe(4);
      expect(await store.billing.reserve(account.id, 'job_2', 0, 4)).toBe(2);
      expect(await store.billing.available(account.id)).toBe(0);
      expect(await store.billing.reserve(account.id, 'job_2', 1, 1)).toBe(0);
      // A chunk's new reservation replaces its old one instead of adding to it.
      expect(await store.billing.reserve(account.id, 'job_1', 0, 1)).toBe(1);
      expect(await store.billing.available(account.id)).toBe(3);
      expect(await store.billing.reserve(account.id, 'job_1', 0, 50)).toBe(4);
      expect(await store.billing.reserve(other.id, 'job_3', 0, 5)).toBe(3);
      expect(await store.billing.available(account.id)).toBe(0);
    });

    it('grants nothing to a job that is not running, and drops what its chunk held', async () => {
      const account = await newAccount(store, 10);
      await processingJob(store, account.id, 'job_1', [5, 5]);
      expect(await store.billing.reserve(account.id, 'job_1', 0, 4)).toBe(4);
      await store.jobs.transition('job_1', 'paused', { reason: 'paused_by_operator', now: NOW });
      expect(await store.billing.available(account.id)).toBe(10);
      // A batch that reserves after the pause (it read the status before it) is given nothing.
      expect(await store.billing.reserve(account.id, 'job_1', 1, 4)).toBe(0);
      expect(await store.billing.available(account.id)).toBe(10);
      expect(await store.billing.reserve(account.id, 'job_missing', 0, 4)).toBe(0);
      expect(await store.billing.available(account.id)).toBe(10);
    });
  });

  describe('top-ups and jobs paused for credits', () => {
    /** A job of the account whose first batch spends the balance and runs out: paused, insufficient_credits. */
    async function pausedForCredits(accountId: string, id: string, keys: string[]): Promise<void> {
      await processingJob(store, accountId, id, [5]);
      const lease = await claimChunk(store, id, 0);
      const result = await store.jobs.commitBatch(batch({ jobId: id, accountId, chunkIndex: 0, lease, cursor: 0, rows: keys.length }, { charges: { keys: [keys] }, outOfCredits: true }));
      expect(result).toEqual({ ok: true, paused: true, failed: false });
      // As the worker does once its chunk reports the pause.
      await store.jobs.releaseChunkLease(id, 0, lease);
    }
    const state = async (id: string) => {
      const job = await store.jobs.require(id);
      return [job.status, job.reason];
    };

    it("resumes only that account's jobs paused with insufficient_credits, in the top-up itself, however small it is", async () => {
      const ann = await newAccount(store, 2);
      const bob = await newAccount(store, 1);
      const hook = await subscribe(store, ann.id, ['bulk.paused']);
      await pausedForCredits(ann.id, 'job_ann_credits', ['a1', 'a2']);
      await pausedForCredits(bob.id, 'job_bob_credits', ['b1']);
      await processingJob(store, ann.id, 'job_ann_operator', [5]);
      await store.jobs.transition('job_ann_operator', 'paused', { reason: 'paused_by_operator', now: NOW });
      await processingJob(store, ann.id, 'job_ann_running', [5]);
      await claimChunk(store, 'job_ann_running', 0, 'worker-c');

      expect(await store.billing.addCredits(ann.id, 1, 'topup', NOW + 5)).toMatchObject({ credits: 1 });
      expect(await state('job_ann_credits')).toEqual(['running', null]);
      expect((await store.jobs.require('job_ann_credits')).updatedAt).toBe(NOW + 5);
      expect(await state('job_ann_operator')).toEqual(['paused', 'paused_by_operator']);
      expect(await state('job_ann_running')).toEqual(['running', null]);
      expect(await state('job_bob_credits')).toEqual(['paused', 'insufficient_credits']);
      // The resumed job's chunk is taken up again from its cursor, and the top-up pays for its next row.
      const lease = await claimChunk(store, 'job_ann_credits', 0, 'worker-b', NOW + 6);
      await store.jobs.commitBatch(batch({ jobId: 'job_ann_credits', accountId: ann.id, chunkIndex: 0, lease, cursor: 2, rows: 1 }, { charges: { keys: [['a3']] }, outOfCredits: true, now: NOW + 6 }));
      expect(await state('job_ann_credits')).toEqual(['paused', 'insufficient_credits']);
      expect(await store.billing.chargeCountForJob('job_ann_credits')).toBe(3);

      // Each pause of ann's jobs was announced to her bulk.paused webhook; bob has none.
      await store.deliveries.relayOutbox(NOW + 7);
      const paused = (await store.deliveries.list(hook, 50)).reverse().map((d) => d.payload as { event: string; data: { id: string; reason: string; rows_left: number; credits_needed_max: number } });
      expect(paused.map((p) => [p.event, p.data.id, p.data.reason, p.data.rows_left, p.data.credits_needed_max])).toEqual([
        ['bulk.paused', 'job_ann_credits', 'insufficient_credits', 3, 3],
        ['bulk.paused', 'job_ann_operator', 'paused_by_operator', 5, 5],
        ['bulk.paused', 'job_ann_credits', 'insufficient_credits', 2, 2],
      ]);
    });

    it('does not pause a job whose account can pay a whole row again when the batch commits (a top-up came after its reservation)', async () => {
      const ann = await newAccount(store, 2);
      await processingJob(store, ann.id, 'job_1', [5]);
      const lease = await claimChunk(store, 'job_1', 0);
      expect(await store.billing.reserve(ann.id, 'job_1', 0, 5)).toBe(2);
      // The worker planned on 2 credits; the top-up commits before its checkpoint does.
      await store.billing.addCredits(ann.id, 10, 'topup', NOW + 1);
      const result = await store.jobs.commitBatch(batch({ jobId: 'job_1', accountId: ann.id, chunkIndex: 0, lease, cursor: 0, rows: 2 }, { charges: { keys: [['k1', 'k2']] }, outOfCredits: true, now: NOW + 2 }));
      expect(result).toEqual({ ok: true, paused: false, failed: false });
      expect(await state('job_1')).toEqual(['running', null]);
      expect(await store.billing.balance(ann.id)).toEqual({ credits: 10, reserved: 0 });
    });

    it('reads the balance and what chunks hold of it together', async () => {
      const ann = await newAccount(store, 10);
      await processingJob(store, ann.id, 'job_1', [5, 5]);
      expect(await store.billing.balance(ann.id)).toEqual({ credits: 10, reserved: 0 });
      await store.billing.reserve(ann.id, 'job_1', 0, 4);
      await store.billing.reserve(ann.id, 'job_1', 1, 3);
      expect(await store.billing.balance(ann.id)).toEqual({ credits: 10, reserved: 7 });
      await store.jobs.transition('job_1', 'cancelled', { now: NOW + 1 });
      expect(await store.billing.balance(ann.id)).toEqual({ credits: 10, reserved: 0 });
      await expect(() => store.billing.balance('acc_missing')).rejects.toMatchObject({ code: 'account_not_found', statusCode: 404 });
    });
  });

  describe('single lookups', () => {
    const event = (credits: number): OutboxEvent => ({ id: `evt_lookup_${credits}_${Math.random()}`, event: 'lookup.completed', accountId: '', payload: { credits } });
    const lookup = (accountId: string, over: Partial<LookupCommit>): LookupCommit => ({
      accountId,
      kind: 'gender',
      charge: { type: 'repeat_free', key: 'ann@x.com', since: SINCE, batchId: 'call_1' },
      cache: [],
      now: NOW,
      ...over,
    });

    it('charges a repeat-free key once in its window, with a ledger line of its own, and caches the answer either way', async () => {
      const account = await newAccount(store, 2);
      const cache = [{ kind: 'gender', key: 'ann@x.com', result: { gender: 'female' } }];
      expect(await store.billing.commitLookup(lookup(account.id, { cache }))).toEqual({ ok: true, credits: 1 });
      expect(await store.billing.commitLookup(lookup(account.id, { charge: { type: 'repeat_free', key: 'ann@x.com', since: SINCE, batchId: 'call_2' } }))).toEqual({ ok: true, credits: 0 });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(1);
      const charges = (await store.billing.ledger(account.id)).filter((l) => l.reason === 'charge');
      expect(charges).toEqual([{ id: chargeLedgerId(account.id, 'single', 'call_1'), accountId: account.id, delta: -1, reason: 'charge', kind: 'gender', jobId: 'single', createdAt: NOW }]);
      expect(await store.billing.freshlyBilled(account.id, 'gender', ['ann@x.com'], SINCE)).toEqual(new Set(['ann@x.com']));
      expect(await store.results.getMany('gender', ['ann@x.com'], SINCE)).toEqual(new Map([['ann@x.com', { gender: 'female' }]]));
    });

    it('charges a flat price per call, nothing for a price of 0, and refuses what the balance cannot pay, writing nothing', async () => {
      const account = await newAccount(store, 5);
      const flat = (amount: number, callId: string) => lookup(account.id, { kind: 'company', charge: { type: 'flat', amount, callId } });
      expect(await store.billing.commitLookup(flat(3, 'c1'))).toEqual({ ok: true, credits: 3 });
      expect(await store.billing.commitLookup(flat(0, 'c2'))).toEqual({ ok: true, credits: 0 });
      const cache = [{ kind: 'company', key: 'name:acme', result: { name: 'Acme' } }];
      expect(await store.billing.commitLookup({ ...flat(3, 'c3'), cache })).toEqual({ ok: false });
      expect(await store.results.getMany('company', ['name:acme'], SINCE)).toEqual(new Map());
      expect((await store.billing.requireAccount(account.id)).credits).toBe(2);
      const charges = (await store.billing.ledger(account.id)).filter((l) => l.reason === 'charge');
      expect(charges).toEqual([{ id: chargeLedgerId(account.id, 'call', 'c1'), accountId: account.id, delta: -3, reason: 'charge', kind: 'company', jobId: null, createdAt: NOW }]);

      const broke = await newAccount(store, 0);
      expect(await store.billing.commitLookup(lookup(broke.id, { cache }))).toEqual({ ok: false });
      expect(await store.billing.ledger(broke.id)).toEqual([]);
      expect(await store.billing.freshlyBilled(broke.id, 'gender', ['ann@x.com'], SINCE)).toEqual(new Set());
    });

    it('queues its event only when an active webhook of the account subscribes to it, with the credits charged', async () => {
      const account = await newAccount(store, 5);
      const eventFor = (credits: number): OutboxEvent => ({ ...event(credits), accountId: account.id });
      expect(await store.billing.commitLookup(lookup(account.id, { event: eventFor }))).toEqual({ ok: true, credits: 1 });
      await subscribe(store, account.id, ['bulk.completed']);
      await subscribe(store, account.id, ['lookup.completed'], { isActive: false });
      const removed = await subscribe(store, account.id, ['lookup.completed']);
      await store.webhooks.remove(removed, NOW);
      const elsewhere = await newAccount(store, 0);
      await subscribe(store, elsewhere.id, ['lookup.completed']);
      expect(await store.billing.commitLookup(lookup(account.id, { charge: { type: 'repeat_free', key: 'bob@x.com', since: SINCE, batchId: 'call_2' }, event: eventFor }))).toEqual({ ok: true, credits: 1 });
      expect(await store.deliveries.relayOutbox(NOW)).toBe(0);

      const webhook = await subscribe(store, account.id, ['bulk.completed', 'lookup.completed']);
      expect(await store.billing.commitLookup(lookup(account.id, { charge: { type: 'repeat_free', key: 'ann@x.com', since: SINCE, batchId: 'call_3' }, event: eventFor }))).toEqual({ ok: true, credits: 0 });
      expect(await store.deliveries.relayOutbox(NOW)).toBe(1);
      expect((await store.deliveries.list(webhook, 10)).map((d) => [d.eventType, d.payload])).toEqual([['lookup.completed', { credits: 0 }]]);
      // A refused lookup queues nothing.
      expect(await store.billing.commitLookup(lookup(account.id, { charge: { type: 'flat', amount: 99, callId: 'c9' }, event: eventFor }))).toEqual({ ok: false });
      expect(await store.deliveries.relayOutbox(NOW)).toBe(0);
    });
  });

  describe('the result cache', () => {
    it('gives the answers looked up after `since`, the latest one for a key, shared by every account', async () => {
      await store.results.put('gender', 'ann@x.com', { gender: 'female', n: 1 }, NOW);
      await store.results.put('gender', 'bob@x.com', { gender: 'male' }, NOW - 10);
      await store.results.put('company', 'ann@x.com', ['a', 1, null], NOW);
      expect(await store.results.getMany('gender', ['ann@x.com', 'bob@x.com', 'cid@x.com'], NOW - 10)).toEqual(new Map([['ann@x.com', { gender: 'female', n: 1 }]]));
      await store.results.put('gender', 'ann@x.com', { gender: 'unknown' }, NOW + 1);
      expect(await store.results.getMany('gender', ['ann@x.com', 'bob@x.com'], NOW - 11)).toEqual(new Map<string, unknown>([['ann@x.com', { gender: 'unknown' }], ['bob@x.com', { gender: 'male' }]]));
      expect(await store.results.getMany('company', ['ann@x.com'], SINCE)).toEqual(new Map([['ann@x.com', ['a', 1, null]]]));
      expect(await store.results.getMany('gender', [], SINCE)).toEqual(new Map());
    });
  });
});
