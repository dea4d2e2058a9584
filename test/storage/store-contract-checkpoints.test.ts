import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { planCharges, type BillableItem } from '../../src/billing/plan-charges.js';
import { flaggedText, ROW_FLAGS, type StoredOutput } from '../../src/storage/job-records.js';
import { chargeLedgerId } from '../../src/storage/ledger-ids.js';
import type { BatchCommit, Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { batch, claimChunk, endEvents, NOW, openTestStore, output, outputText, processingJob, SINCE, subscribe, newAccount, type TestStore } from '../support/test-store.js';
import { paidNames } from '../support/billing-names.js';

const { found, error } = ROW_FLAGS;
const KINDS = ['gender', 'company', 'phone_breaches'];

describe.each(TEST_STORES)('Store contract on %s: checkpoints', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  /** A running job of a fresh account with `credits`, its chunk 0 leased. */
  async function leasedChunk(credits = 10, rowCounts = [10], options = {}) {
    const account = await newAccount(store, credits);
    const job = await processingJob(store, account.id, 'job_1', rowCounts, NOW, options);
    const lease = await claimChunk(store, job.id, 0);
    const at = (cursor: number, rows: number, over: Parameters<typeof batch>[1] = {}): BatchCommit =>
      batch({ jobId: job.id, accountId: account.id, chunkIndex: 0, lease, cursor, rows }, over);
    return { account, job, lease, at };
  }

  /** Everything a refused checkpoint must have left alone. */
  async function snapshot(accountId: string, jobId: string) {
    return {
      credits: (await store.billing.requireAccount(accountId)).credits,
      available: await store.billing.available(accountId),
      ledger: await store.billing.ledger(accountId),
      job: await store.jobs.require(jobId),
      chunks: await store.jobs.chunks(jobId),
      outputs: await outputText(store, jobId, 0),
    };
  }

  describe('commitBatch', () => {
    it('writes the rows, moves the cursor, adds the counters, and gives the outputs back in row order', async () => {
      const { job, at } = await leasedChunk();
      const counters = { processed: 3, found: 2, invalid: 1, duplicate: 0, error: 0, credits: 0 };
      const first = output([['a,1\r\n', found], ['"two\r\nlines",2\r\n', found], ['é,3\r\n', 0]]);
      const second = output([['d,4\r\n', error], ['e,5\r\n', found | error], ['f,6\r\n', found]]);
      // Committed out of row order would be refused (the cursor), so the order read back is the store's.
      expect(await store.jobs.commitBatch(at(0, 3, { output: first, counters }))).toEqual({ ok: true, paused: false, failed: false });
      expect(await store.jobs.commitBatch(at(3, 3, { output: second, counters: { ...counters, invalid: 0, duplicate: 2, error: 2, found: 2 } }))).toEqual({ ok: true, paused: false, failed: false });

      expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ cursor: 6, status: 'pending' });
      expect(await store.jobs.require(job.id)).toMatchObject({ processedRows: 6, foundRows: 4, invalidRows: 1, duplicateRows: 2, errorRows: 2, creditsUsed: 0 });
      const outputs: StoredOutput[] = [];
      for await (const o of store.jobs.outputs(job.id, 0)) outputs.push(o);
      expect(outputs.map((o) => [o.allText, [...o.rowFlags], o.rowEnds && [...o.rowEnds], o.foundText, o.errorsText])).toEqual([
        [first.allText, [...first.rowFlags], [...first.rowEnds], '', ''],
        [second.allText, [...second.rowFlags], [...second.rowEnds], '', ''],
      ]);
      expect(outputs.every((o) => Buffer.isBuffer(o.rowFlags) && Buffer.isBuffer(o.rowEnds))).toBe(true);
      // The found and errors parts are cut from the stored rows by their ends: whole rows, in order.
      expect(outputs.map((o) => flaggedText(o, found)).join('')).toBe('a,1\r\n"two\r\nlines",2\r\ne,5\r\nf,6\r\n');
      expect(outputs.map((o) => flaggedText(o, error)).join('')).toBe('d,4\r\ne,5\r\n');
      expect(flaggedText(outputs[0]!, error)).toBe('');
      // A batch whose rows are all found gives all of its text.
      const allFound = output([['g,7\r\n', found], ['h,8\r\n', found]]);
      await store.jobs.commitBatch(at(6, 2, { output: allFound }));
      const third: StoredOutput[] = [];
      for await (const o of store.jobs.outputs(job.id, 0)) third.push(o);
      expect(flaggedText(third[2]!, found)).toBe('g,7\r\nh,8\r\n');
    });

    it('charges each kind with one ledger line whose id is derived from the batch, bills the keys, caches the answers and releases the reservation', async () => {
      const { account, job, at } = await leasedChunk(10);
      expect(await store.billing.reserve(account.id, job.id, 0, 4)).toBe(4);
      expect(await store.billing.available(account.id)).toBe(6);
      const result = await store.jobs.commitBatch(
        at(0, 2, {
          counters: { processed: 2, found: 1, invalid: 0, duplicate: 0, error: 0, credits: 3 },
          charges: { kinds: KINDS, keys: [['a@x.com'], [], ['+4930123', '+4930999']], batchId: '0:0' },
          cache: [
            { kind: 'gender', key: 'a@x.com', result: { gender: 'female', probability: 0.98 } },
            { kind: 'phone_breaches', key: '+4930123', result: { breached: true, breaches: ['x'] } },
          ],
          now: NOW + 5,
        }),
      );
      expect(result).toEqual({ ok: true, paused: false, failed: false });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(7);
      expect(await store.billing.available(account.id)).toBe(7);
      const charges = (await store.billing.ledger(account.id)).filter((l) => l.reason === 'charge');
      expect(charges.sort((x, y) => (x.kind! < y.kind! ? -1 : 1))).toEqual([
        { id: chargeLedgerId(account.id, job.id, '0:0'), accountId: account.id, delta: -1, reason: 'charge', kind: 'gender', jobId: job.id, createdAt: NOW + 5 },
        { id: chargeLedgerId(account.id, job.id, '0:0:phone_breaches'), accountId: account.id, delta: -2, reason: 'charge', kind: 'phone_breaches', jobId: job.id, createdAt: NOW + 5 },
      ]);
      expect(await store.jobs.require(job.id)).toMatchObject({ creditsUsed: 3 });
      expect(await store.billing.chargeCountForJob(job.id)).toBe(3);
      expect(await store.billing.chargedKeys(account.id, job.id)).toEqual([...paidNames(store, 'phone_breaches', ['+4930123', '+4930999']), ...paidNames(store, 'gender', ['a@x.com'])].sort());
      expect(await store.billing.freshlyBilled(account.id, 'gender', ['a@x.com', 'b@x.com'], SINCE)).toEqual(new Set(['a@x.com']));
      expect(await store.billing.freshlyBilled(account.id, 'company', ['a@x.com'], SINCE)).toEqual(new Set());
      expect(await store.results.getMany('gender', ['a@x.com', 'b@x.com'], SINCE)).toEqual(new Map([['a@x.com', { gender: 'female', probability: 0.98 }]]));
      expect(await store.results.getMany('phone_breaches', ['+4930123'], NOW + 5)).toEqual(new Map());
    });

    it('refuses a replayed batch id (its ledger line exists) and writes nothing of it', async () => {
      const { account, job, at } = await leasedChunk(10);
      await store.jobs.commitBatch(at(0, 2, { charges: { kinds: KINDS, keys: [['a@x.com'], [], ['+4930123']], batchId: '0:0' } }));
      const before = await snapshot(account.id, job.id);
      await expect(() => store.jobs.commitBatch(at(2, 1, { charges: { kinds: KINDS, keys: [['c@x.com'], [], []], batchId: '0:0' } }))).rejects.toThrow();
      expect(await snapshot(account.id, job.id)).toEqual(before);
      expect(await store.billing.freshlyBilled(account.id, 'gender', ['c@x.com'], SINCE)).toEqual(new Set());
    });

    it('refuses keys billed since `since`, kind by kind, saying which and the balance, and writes nothing', async () => {
      const { account, job, at } = await leasedChunk(10);
      await store.jobs.commitBatch(at(0, 1, { charges: { kinds: KINDS, keys: [['same'], [], []] } }));
      expect(await store.billing.reserve(account.id, job.id, 0, 2)).toBe(2);
      const before = await snapshot(account.id, job.id);
      const refused = await store.jobs.commitBatch(at(1, 2, { charges: { kinds: KINDS, keys: [['same', 'other'], ['same'], []] }, cache: [{ kind: 'gender', key: 'other', result: 1 }] }));
      expect(refused).toEqual({ ok: false, billed: [new Set(['same']), new Set(), new Set()], balance: 9 });
      expect(await snapshot(account.id, job.id)).toEqual(before);
      expect(await store.results.getMany('gender', ['other'], SINCE)).toEqual(new Map());
      // The same key of another kind is a charge of its own.
      expect(await store.jobs.commitBatch(at(1, 2, { charges: { kinds: KINDS, keys: [['other'], ['same'], []] } }))).toMatchObject({ ok: true });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(7);
      // Planned from what the store says is billed, a repeat in the batch is free too, kind by kind.
      const billed = await Promise.all(KINDS.map((k) => store.billing.freshlyBilled(account.id, k, ['same'], SINCE)));
      const repeats = planCharges(3, [{ kind: 0, key: 'same', row: 0 }, { kind: 2, key: 'same', row: 0 }, { kind: 2, key: 'same', row: 1 }], billed, Number.POSITIVE_INFINITY);
      expect([repeats.charged.map((k) => [...k]), repeats.total]).toEqual([[[], [], ['same']], 1]);
      expect(await store.jobs.commitBatch(at(3, 2, { charges: { kinds: KINDS, keys: repeats.charged.map((k) => [...k]) } }))).toMatchObject({ ok: true });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(6);
      // Billed before the window: charged again.
      expect(await store.jobs.commitBatch(at(5, 1, { charges: { kinds: KINDS, keys: [['same'], [], []], since: NOW } }))).toMatchObject({ ok: true });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(5);
    });

    it('refuses charges the balance cannot cover, with the balance, and writes nothing', async () => {
      const { account, job, at } = await leasedChunk(2);
      const before = await snapshot(account.id, job.id);
      const refused = await store.jobs.commitBatch(at(0, 3, { charges: { kinds: KINDS, keys: [['a', 'b'], ['c'], []] } }));
      expect(refused).toEqual({ ok: false, billed: [new Set(), new Set(), new Set()], balance: 2 });
      expect(await snapshot(account.id, job.id)).toEqual(before);
    });

    it('pays for a row whole or not at all: the refused plan is made again with the balance the store reported', async () => {
      const { account, job, at } = await leasedChunk(3);
      const items: BillableItem[] = [
        { kind: 0, key: 'a@x.com', row: 0 },
        { kind: 1, key: 'name:acme', row: 0 },
        { kind: 0, key: 'b@x.com', row: 1 },
        { kind: 1, key: 'name:globex', row: 1 },
        { kind: 2, key: '+4930123', row: 1 },
      ];
      const none = KINDS.map(() => new Set<string>());
      const hopeful = planCharges(3, items, none, Number.POSITIVE_INFINITY);
      const refused = await store.jobs.commitBatch(at(0, 2, { charges: { kinds: KINDS, keys: hopeful.charged.map((s) => [...s]) } }));
      expect(refused).toMatchObject({ ok: false, balance: 3 });
      // Row 0 costs 2; row 1 needs 3 with 1 left: none of row 1 is charged, not even its first item.
      const plan = planCharges(3, items, none, refused.ok ? 0 : refused.balance);
      expect([plan.unpaidRow, plan.total, plan.charged.map((s) => [...s])]).toEqual([1, 2, [['a@x.com'], ['name:acme'], []]]);
      expect(await store.jobs.commitBatch(at(0, plan.unpaidRow!, { charges: { kinds: KINDS, keys: plan.charged.map((s) => [...s]) }, outOfCredits: true }))).toEqual({ ok: true, paused: true, failed: false });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(1);
      expect(await store.billing.freshlyBilled(account.id, 'gender', ['a@x.com', 'b@x.com'], SINCE)).toEqual(new Set(['a@x.com']));
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'paused', reason: 'insufficient_credits' });
    });

    it('reports keys another job billed meanwhile, and commits the plan made again with them', async () => {
      const { account, job, at } = await leasedChunk(10, [10]);
      await store.jobs.commitBatch(at(0, 1, { charges: { kinds: KINDS, keys: [['paid@x.com'], [], []] } }));
      const known = await store.billing.freshlyBilled(account.id, 'gender', ['known@x.com', 'paid@x.com', 'new@x.com'], SINCE);
      // Another job of the account pays for known@x.com after this batch read what was billed.
      const other = await processingJob(store, account.id, 'job_2', [5], NOW + 1);
      const otherLease = await claimChunk(store, other.id, 0, 'worker-b');
      await store.jobs.commitBatch(batch({ jobId: other.id, accountId: account.id, chunkIndex: 0, lease: otherLease, cursor: 0, rows: 1 }, { charges: { kinds: KINDS, keys: [['known@x.com'], [], []] } }));

      const items: BillableItem[] = ['known@x.com', 'paid@x.com', 'new@x.com'].map((key, row) => ({ kind: 0, key, row }));
      const first = planCharges(3, items, [known, new Set(), new Set()], Number.POSITIVE_INFINITY);
      const refused = await store.jobs.commitBatch(at(1, 3, { charges: { kinds: KINDS, keys: first.charged.map((s) => [...s]) } }));
      expect(refused).toEqual({ ok: false, billed: [new Set(['known@x.com']), new Set(), new Set()], balance: 8 });
      const again = planCharges(3, items, refused.ok ? [] : refused.billed.map((now, k) => new Set([...now, ...(k === 0 ? known : [])])), 8);
      expect(again.charged.map((s) => [...s])).toEqual([['new@x.com'], [], []]);
      expect(await store.jobs.commitBatch(at(1, 3, { charges: { kinds: KINDS, keys: again.charged.map((s) => [...s]) } }))).toMatchObject({ ok: true });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(7);
      expect(await store.billing.chargedKeys(account.id, job.id)).toEqual(paidNames(store, 'gender', ['new@x.com', 'paid@x.com']));
      expect(await store.billing.chargedKeys(account.id, other.id)).toEqual(paidNames(store, 'gender', ['known@x.com']));
    });

    it('is fenced: a stale epoch, another owner or a moved cursor gets lease_lost and writes nothing', async () => {
      const { account, job, lease, at } = await leasedChunk(10);
      await store.jobs.commitBatch(at(0, 2));
      const before = await snapshot(account.id, job.id);
      const charged = { charges: { kinds: KINDS, keys: [['x@x.com'], [], []] } };
      for (const wrong of [{ lease: { ...lease, epoch: lease.epoch + 1 } }, { lease: { ...lease, owner: 'worker-z' } }, { cursor: 1 }, { cursor: 3 }]) {
        await expect(() => store.jobs.commitBatch({ ...at(2, 2, charged), ...wrong })).rejects.toMatchObject({ code: 'lease_lost' });
      }
      expect(await snapshot(account.id, job.id)).toEqual(before);
    });

    it('fails the job past its error budget, in the checkpoint that crosses it, keeping its rows, with one end event', async () => {
      // 10 rows at 10%: one error row is within the budget, the second is past it.
      const { account, job, at } = await leasedChunk(10, [5, 5], { maxErrorRate: 0.1 });
      const webhook = await subscribe(store, account.id);
      const otherLease = await claimChunk(store, job.id, 1, 'worker-b');
      await store.billing.reserve(account.id, job.id, 0, 3);
      await store.billing.reserve(account.id, job.id, 1, 3);
      const budget = { errorBudget: { maxErrorRate: 0.1, message: 'more than 1 rows failed' } };
      const oneError = { processed: 2, found: 0, invalid: 0, duplicate: 0, error: 1, credits: 0 };
      expect(await store.jobs.commitBatch(at(0, 2, { ...budget, counters: oneError }))).toEqual({ ok: true, paused: false, failed: false });
      expect(await store.jobs.status(job.id)).toBe('running');
      expect(await store.jobs.commitBatch(at(2, 2, { ...budget, counters: oneError, now: NOW + 7 }))).toEqual({ ok: true, paused: false, failed: true });
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'failed', reason: 'error_budget_exceeded', errorMessage: 'more than 1 rows failed', errorRows: 2, processedRows: 4, finishedAt: NOW + 7 });
      expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ cursor: 4 });
      expect(await outputText(store, job.id, 0)).toBe('0:r0\r\n0:r1\r\n0:r2\r\n0:r3\r\n');
      expect(await store.billing.available(account.id)).toBe(10);
      // The other chunk's worker commits its batch before it learns: the job fails once.
      const late = batch({ jobId: job.id, accountId: account.id, chunkIndex: 1, lease: otherLease, cursor: 0, rows: 2 }, { ...budget, counters: oneError });
      expect(await store.jobs.commitBatch(late)).toEqual({ ok: true, paused: false, failed: false });
      expect(await endEvents(store, webhook)).toEqual([{ job: job.id, status: 'failed' }]);
    });

    it('pauses the job when the balance ran out, releasing all its reservations, with no end event; a batch of 0 rows too', async () => {
      // The batch spends the last credits: a pause is for an account that cannot pay another row.
      const { account, job, at } = await leasedChunk(3, [5, 5]);
      const webhook = await subscribe(store, account.id);
      await store.billing.reserve(account.id, job.id, 0, 3);
      await store.billing.reserve(account.id, job.id, 1, 0);
      expect(await store.jobs.commitBatch(at(0, 2, { outOfCredits: true, charges: { keys: [['k1', 'k2', 'k3']] }, now: NOW + 3 }))).toEqual({ ok: true, paused: true, failed: false });
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'paused', reason: 'insufficient_credits', processedRows: 2, updatedAt: NOW + 3, finishedAt: null });
      expect(await store.billing.balance(account.id)).toEqual({ credits: 0, reserved: 0 });
      expect(await endEvents(store, webhook)).toEqual([]);

      const second = await processingJob(store, account.id, 'job_2', [5], NOW + 1);
      const lease = await claimChunk(store, second.id, 0, 'worker-b');
      await store.billing.reserve(account.id, second.id, 0, 5);
      const nothing = batch({ jobId: second.id, accountId: account.id, chunkIndex: 0, lease, cursor: 0, rows: 0 }, { outOfCredits: true });
      expect(await store.jobs.commitBatch(nothing)).toEqual({ ok: true, paused: true, failed: false });
      expect(await store.jobs.require(second.id)).toMatchObject({ status: 'paused', reason: 'insufficient_credits', processedRows: 0 });
      expect(await store.jobs.chunk(second.id, 0)).toMatchObject({ cursor: 0 });
      expect(await store.billing.balance(account.id)).toEqual({ credits: 0, reserved: 0 });
    });

    it('does not pause while another chunk in work holds credits that may come back: the rows commit and the job runs on', async () => {
      const { account, job, at } = await leasedChunk(10, [5, 5]);
      await claimChunk(store, job.id, 1, 'worker-b');
      await store.billing.reserve(account.id, job.id, 0, 3);
      await store.billing.reserve(account.id, job.id, 1, 4);
      expect(await store.jobs.commitBatch(at(0, 2, { outOfCredits: true }))).toEqual({ ok: true, paused: false, failed: false });
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'running', processedRows: 2 });
      expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ cursor: 2 });
      // Its own reservation went with the commit; the other chunk's stays.
      expect(await store.billing.available(account.id)).toBe(6);
    });

    it('pauses all the same when the credits held belong to a chunk nobody has in work (its batch failed before its checkpoint)', async () => {
      const { account, job, at } = await leasedChunk(7, [5, 5]);
      await store.billing.reserve(account.id, job.id, 0, 3);
      await store.billing.reserve(account.id, job.id, 1, 4);
      expect(await store.jobs.commitBatch(at(0, 2, { outOfCredits: true, charges: { keys: [['k1', 'k2', 'k3']] } }))).toEqual({ ok: true, paused: true, failed: false });
      expect(await store.jobs.require(job.id)).toMatchObject({ status: 'paused', reason: 'insufficient_credits' });
    });

    it('takes nothing of a batch whose job was paused or cancelled meanwhile but its reservation', async () => {
      for (const [to, reason] of [['paused', 'paused_by_operator'], ['cancelled', 'cancelled']] as const) {
        const account = await newAccount(store, 10);
        const job = await processingJob(store, account.id, `job_${to}`, [5], NOW);
        const lease = await claimChunk(store, job.id, 0);
        await store.billing.reserve(account.id, job.id, 0, 3);
        await store.jobs.transition(job.id, to, { reason, now: NOW + 1 });
        await store.billing.reserve(account.id, job.id, 0, 3);
        const late = batch(
          { jobId: job.id, accountId: account.id, chunkIndex: 0, lease, cursor: 0, rows: 2 },
          { charges: { kinds: KINDS, keys: [['late@x.com'], [], []] }, counters: { processed: 2, found: 0, invalid: 0, duplicate: 0, error: 0, credits: 1 } },
        );
        expect(await store.jobs.commitBatch(late), to).toEqual({ ok: true, paused: true, failed: false });
        expect(await store.jobs.require(job.id), to).toMatchObject({ status: to, processedRows: 0, creditsUsed: 0 });
        expect(await store.jobs.chunk(job.id, 0), to).toMatchObject({ cursor: 0 });
        expect((await store.billing.requireAccount(account.id)).credits, to).toBe(10);
        expect(await store.billing.available(account.id), to).toBe(10);
        expect(await outputText(store, job.id, 0), to).toBe('');
      }
    });

    it('refuses a batch of 0 rows from a worker that lost its lease: the job neither pauses nor loses its reservations', async () => {
      const { account, job, lease, at } = await leasedChunk(10);
      await store.billing.reserve(account.id, job.id, 0, 4);
      const stale = { ...lease, epoch: lease.epoch - 1 };
      const before = await snapshot(account.id, job.id);
      await expect(() => store.jobs.commitBatch({ ...at(0, 0, { outOfCredits: true }), lease: stale })).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await snapshot(account.id, job.id)).toEqual(before);
      expect(before.job.status).toBe('running');
      expect(before.available).toBe(6);
    });
  });
});

describe('flaggedText', () => {
  it('gives nothing for a batch of no rows', () => {
    expect(flaggedText({ ...output([]), foundText: '', errorsText: '' }, found)).toBe('');
  });

  it('reads an output written before row ends were kept from its own filtered texts', () => {
    const old: StoredOutput = { allText: 'a\r\nb\r\n', rowEnds: null, rowFlags: Buffer.from([found, error]), foundText: 'a\r\n', errorsText: 'b\r\n' };
    expect(flaggedText(old, found)).toBe('a\r\n');
    expect(flaggedText(old, error)).toBe('b\r\n');
  });
});
