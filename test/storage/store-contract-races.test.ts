import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { JobRecord, Lease } from '../../src/storage/job-records.js';
import type { BatchCommit, BatchCommitResult, Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { batch, claimChunk, LEASE_MS, newAccount, newJob, NOW, openTestStore, outputText, processingJob, subscribe, type TestStore } from '../support/test-store.js';
import { paidNames } from '../support/billing-names.js';

/** Rounds per race: each is one chance for a missing lock to show; the assertions hold in every one. */
const ROUNDS = 20;
/** Keys one racing checkpoint pays for. */
const BATCH = 200;

/**
 * Two processes on one database race for the same rows. `a` and `b` are two stores opened on the
 * database of `store` (on SQLite, each in a worker thread of its own with its own connection, so
 * their operations really overlap); `store` sets up and checks. Every round starts both sides
 * at once with Promise.all.
 */
describe.each(TEST_STORES)('Store contract on %s: races between two processes', (kind) => {
  let opened: TestStore;
  let store: Store;
  let a: Store;
  let b: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
    [a, b] = await Promise.all([opened.openPeer(), opened.openPeer()]);
  });
  afterEach(() => opened.close());

  async function cancel(...jobIds: string[]) {
    for (const id of jobIds) await store.jobs.transition(id, 'cancelled', { now: NOW });
  }

  /*
   * Without serialisation, both claimers read the same candidate before either takes it. On
   * SQLite a claim that is not one BEGIN IMMEDIATE transaction either takes the same row twice
   * (no transaction: epoch 2, a duplicate) or fails with SQLITE_BUSY when the second reader tries
   * to write (a deferred one); on PostgreSQL, without FOR UPDATE SKIP LOCKED (or a WHERE that
   * re-checks the lease) both UPDATEs succeed one after the other. Either way a claim is duplicated,
   * has epoch 2, or throws, and these tests fail.
   */
  it('two claimers never get the same chunk', async () => {
    const account = await newAccount(store);
    for (let round = 0; round < ROUNDS; round++) {
      const job = await processingJob(store, account.id, `job_${round}`, [2, 2, 2, 2, 2, 2, 2, 2]);
      const drain = async (claimer: Store, owner: string) => {
        const got: string[] = [];
        for (let claim = await claimer.jobs.acquireChunk(owner, NOW, LEASE_MS); claim; claim = await claimer.jobs.acquireChunk(owner, NOW, LEASE_MS)) {
          expect(claim.lease).toEqual({ owner, epoch: 1 });
          got.push(`${claim.chunk.jobId}/${claim.chunk.chunkIndex}`);
        }
        return got;
      };
      const [byA, byB] = await Promise.all([drain(a, 'worker-a'), drain(b, 'worker-b')]);
      expect([...byA, ...byB].sort()).toEqual(Array.from({ length: 8 }, (_, i) => `${job.id}/${i}`));
      expect((await store.jobs.chunks(job.id)).map((c) => c.leaseEpoch)).toEqual(Array(8).fill(1));
      await cancel(job.id);
    }
  });

  it('two claimers never get the same job phase', async () => {
    const account = await newAccount(store);
    for (let round = 0; round < ROUNDS; round++) {
      const ids = Array.from({ length: 24 }, (_, i) => `job_${round}_${String(i).padStart(2, '0')}`);
      for (const id of ids) await newJob(store, account.id, id);
      const drain = async (claimer: Store, owner: string) => {
        const got: string[] = [];
        for (let claim = await claimer.jobs.acquireJobPhase(owner, NOW, LEASE_MS); claim; claim = await claimer.jobs.acquireJobPhase(owner, NOW, LEASE_MS)) {
          expect(claim.lease).toEqual({ owner, epoch: 1 });
          got.push(claim.job.id);
        }
        return got;
      };
      const [byA, byB] = await Promise.all([drain(a, 'worker-a'), drain(b, 'worker-b')]);
      expect([...byA, ...byB].sort()).toEqual([...ids].sort());
      await cancel(...ids);
    }
  });

  /*
   * The cap is a count read before the claim writes: two claimers that both count 0 running jobs
   * of an account would both start one. SQLite counts inside the claim's IMMEDIATE transaction;
   * PostgreSQL's snapshot cannot see the other's uncommitted start, so it locks the account and
   * counts again. Both claimers drain the queue, so they keep reaching for the same next job.
   */
  it('two claimers start no more jobs of an account than its running-jobs cap', async () => {
    const accounts = [];
    for (let i = 0; i < 8; i++) accounts.push(await newAccount(store));
    for (let round = 0; round < ROUNDS; round++) {
      const ids: string[] = [];
      for (let j = 0; j < 2; j++) {
        for (const [i, account] of accounts.entries()) {
          ids.push(`job_${round}_${i}_${j}`);
          await newJob(store, account.id, ids.at(-1)!);
        }
      }
      const drain = async (claimer: Store, owner: string) => {
        const got: string[] = [];
        for (let claim = await claimer.jobs.acquireJobPhase(owner, NOW, LEASE_MS, 1); claim; claim = await claimer.jobs.acquireJobPhase(owner, NOW, LEASE_MS, 1)) {
          expect(claim.lease).toEqual({ owner, epoch: 1 });
          got.push(claim.job.id);
        }
        return got;
      };
      const [byA, byB] = await Promise.all([drain(a, 'worker-a'), drain(b, 'worker-b')]);
      for (const account of accounts) expect((await store.jobs.list({ accountId: account.id, status: 'running', limit: 10, offset: 0 })).total).toBe(1);
      expect(new Set([...byA, ...byB]).size).toBe(accounts.length);
      // And the job each account starts is its oldest, as the port promises, whoever claims it.
      expect([...byA, ...byB].sort()).toEqual(accounts.map((_, i) => `job_${round}_${i}_0`));
      await cancel(...ids);
    }
  });

  /*
   * The fence is the epoch, owner and cursor in the WHERE of the checkpoint's first write, in the
   * same transaction as everything else it writes. Without it the late commit would succeed after
   * the takeover (and the check after the takeover fails); with the fence checked apart from the
   * writes, a commit that checked before the takeover and wrote after it would put a second batch
   * at one cursor (the outputs and charges below would not add up).
   */
  it('a fenced late commit: the old holder writes nothing once its lease is taken over', async () => {
    const account = await newAccount(store, 1_000);
    for (let round = 0; round < ROUNDS; round++) {
      const job = await processingJob(store, account.id, `job_${round}`, [20]);
      const old = await claimChunk(store, job.id, 0, 'worker-a', NOW);
      const at = (lease: Lease, cursor: number, key: string, now: number): BatchCommit =>
        batch({ jobId: job.id, accountId: account.id, chunkIndex: 0, lease, cursor, rows: 2 }, { charges: { keys: [[key]] }, counters: { processed: 2, found: 0, invalid: 0, duplicate: 0, error: 0, credits: 1 }, now });
      expect(await a.jobs.commitBatch(at(old, 0, `first_${round}`, NOW))).toMatchObject({ ok: true });
      const credits = (await store.billing.requireAccount(account.id)).credits;

      // The old holder's next commit and the takeover (then the new holder's commit) start together.
      const late = () => a.jobs.commitBatch(at(old, 2, `late_${round}`, NOW + LEASE_MS + 1)).then(
        (r) => ({ ok: true as const, r }),
        (e: { code?: string }) => ({ ok: false as const, code: e.code }),
      );
      const takeover = async () => {
        // As a worker polls: PostgreSQL's SKIP LOCKED passes over the chunk while the late commit
        // holds its row, and a claim in that instant finds nothing.
        let claim = await b.jobs.acquireChunk('worker-b', NOW + LEASE_MS + 1, LEASE_MS);
        for (let poll = 0; !claim && poll < 100; poll++) claim = await b.jobs.acquireChunk('worker-b', NOW + LEASE_MS + 1, LEASE_MS);
        expect(claim?.lease.epoch).toBe(old.epoch + 1);
        const result = await b.jobs.commitBatch(at(claim!.lease, claim!.chunk.cursor, `new_${round}`, NOW + LEASE_MS + 2));
        return { lease: claim!.lease, cursor: claim!.chunk.cursor, result };
      };
      const [lateOutcome, taken] = await Promise.all([late(), takeover()]);
      expect(taken.result).toMatchObject({ ok: true });
      const lateWon = lateOutcome.ok;
      if (!lateOutcome.ok) expect(lateOutcome.code).toBe('lease_lost');
      // Whichever came first, each cursor holds one batch, and the charges are those of the batches kept.
      expect(taken.cursor).toBe(lateWon ? 4 : 2);
      expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ cursor: taken.cursor + 2, leaseEpoch: old.epoch + 1 });
      const rows = Array.from({ length: taken.cursor + 2 }, (_, i) => `0:r${i}\r\n`).join('');
      expect(await outputText(store, job.id, 0)).toBe(rows);
      expect(await store.billing.chargedKeys(account.id, job.id)).toEqual(paidNames(store, 'gender', [`first_${round}`, ...(lateWon ? [`late_${round}`] : []), `new_${round}`]));
      expect((await store.billing.requireAccount(account.id)).credits).toBe(credits - (lateWon ? 2 : 1));

      // Now the takeover has happened for certain: the old holder's commit is refused and writes nothing.
      const before = { credits: (await store.billing.requireAccount(account.id)).credits, ledger: await store.billing.ledger(account.id), chunk: await store.jobs.chunk(job.id, 0), outputs: await outputText(store, job.id, 0) };
      await expect(() => a.jobs.commitBatch(at(old, taken.cursor + 2, `later_${round}`, NOW + LEASE_MS + 3))).rejects.toMatchObject({ code: 'lease_lost' });
      expect({ credits: (await store.billing.requireAccount(account.id)).credits, ledger: await store.billing.ledger(account.id), chunk: await store.jobs.chunk(job.id, 0), outputs: await outputText(store, job.id, 0) }).toEqual(before);
      expect(await store.billing.freshlyBilled(account.id, 'gender', [`later_${round}`], 0)).toEqual(new Set());
      await cancel(job.id);
    }
  });

  /*
   * Both checkpoints check "billed since the window began?" and then charge. Unless the check and
   * the debit of one are serialised against the other's (SQLite: one writer; PostgreSQL: the
   * account's row lock taken first), both see the key unbilled and both pay: two ledger lines, two
   * credits, and no `ok: false`. Each batch pays for BATCH keys, as a real checkpoint does: the
   * time between the check and the debit is then long enough for the two to overlap.
   */
  it('two jobs of one account charging one key at once: exactly one pays, the other is told and writes nothing', async () => {
    const credits = ROUNDS * (BATCH + 1);
    const account = await newAccount(store, credits);
    for (let round = 0; round < ROUNDS; round++) {
      const jobs = [await processingJob(store, account.id, `job_${round}_a`, [BATCH + 1]), await processingJob(store, account.id, `job_${round}_b`, [BATCH + 1])];
      const leases = [await claimChunk(store, jobs[0]!.id, 0, 'worker-a'), await claimChunk(store, jobs[1]!.id, 0, 'worker-b')];
      const shared = `shared_${round}@x.com`;
      // Last in the batch: an unserialised commit would record it as billed only at its very end.
      const keys = (j: number) => [...Array.from({ length: BATCH }, (_, i) => `own_${round}_${j}_${i}@x.com`), shared];
      const commit = (j: number) =>
        batch(
          { jobId: jobs[j]!.id, accountId: account.id, chunkIndex: 0, lease: leases[j]!, cursor: 0, rows: BATCH + 1 },
          { charges: { keys: [keys(j)] }, counters: { processed: BATCH + 1, found: 0, invalid: 0, duplicate: 0, error: 0, credits: BATCH + 1 } },
        );
      const results = await Promise.all([a.jobs.commitBatch(commit(0)), b.jobs.commitBatch(commit(1))]);
      const winner = results.findIndex((r) => r.ok);
      expect(winner).toBeGreaterThanOrEqual(0);
      const loser = 1 - winner;
      const left = credits - (round + 1) * (BATCH + 1);
      expect(results[loser]).toEqual({ ok: false, billed: [new Set([shared])], balance: left });
      expect((await store.billing.requireAccount(account.id)).credits).toBe(left);
      expect(await store.billing.chargeCountForJob(jobs[winner]!.id)).toBe(BATCH + 1);
      expect(await store.billing.chargeCountForJob(jobs[loser]!.id)).toBe(0);
      expect(await store.billing.freshlyBilled(account.id, 'gender', keys(loser), 0)).toEqual(new Set([shared]));
      expect(await store.jobs.chunk(jobs[loser]!.id, 0)).toMatchObject({ cursor: 0 });
      expect(await outputText(store, jobs[loser]!.id, 0)).toBe('');
      expect(await store.jobs.require(jobs[loser]!.id)).toMatchObject({ processedRows: 0, creditsUsed: 0 });
      await cancel(...jobs.map((j) => j.id));
    }
  });

  /*
   * Each checkpoint checks the balance, then debits. Without serialisation several see the same
   * balance and all debit: on PostgreSQL the CHECK (credits >= 0) then fails one with an error (not
   * `ok: false`); on SQLite the guarded debit (`AND credits >= ?`) silently debits nothing while the
   * ledger line and billing rows are still written, so the ledger no longer matches the balance.
   */
  it('a balance at its limit: concurrent checkpoints never take it below 0, and the ledger holds exactly what was spent', async () => {
    const JOBS = 6;
    for (let round = 0; round < ROUNDS; round++) {
      // 6 jobs want BATCH credits each, of 3.5 times that: three pay, three are told the balance.
      const credits = 3.5 * BATCH;
      const account = await newAccount(store, credits);
      const jobs: JobRecord[] = [];
      for (let j = 0; j < JOBS; j++) jobs.push(await processingJob(store, account.id, `job_${round}_${j}`, [BATCH]));
      const leases: Lease[] = [];
      for (const job of jobs) leases.push(await claimChunk(store, job.id, 0, `worker-${job.id}`));
      const keys = (j: number) => Array.from({ length: BATCH }, (_, i) => `k_${round}_${j}_${String(i).padStart(3, '0')}`);
      const commit = (j: number) =>
        batch(
          { jobId: jobs[j]!.id, accountId: account.id, chunkIndex: 0, lease: leases[j]!, cursor: 0, rows: BATCH },
          { charges: { keys: [keys(j)] }, counters: { processed: BATCH, found: 0, invalid: 0, duplicate: 0, error: 0, credits: BATCH } },
        );
      const results: BatchCommitResult[] = await Promise.all(jobs.map((_, j) => (j % 2 === 0 ? a : b).jobs.commitBatch(commit(j))));
      const paid = results.flatMap((r, j) => (r.ok ? [j] : []));
      expect(paid).toHaveLength(3);
      for (const r of results) if (!r.ok) expect(r).toEqual({ ok: false, billed: [new Set()], balance: BATCH / 2 });
      const after = await store.billing.requireAccount(account.id);
      expect(after.credits).toBe(BATCH / 2);
      const charges = (await store.billing.ledger(account.id)).filter((l) => l.reason === 'charge');
      expect(charges.reduce((sum, l) => sum - l.delta, 0)).toBe(credits - after.credits);
      expect(charges.map((l) => l.jobId).sort()).toEqual(paid.map((j) => jobs[j]!.id).sort());
      for (const [j, job] of jobs.entries()) {
        expect(await store.jobs.chunk(job.id, 0)).toMatchObject({ cursor: paid.includes(j) ? BATCH : 0 });
        expect(await store.billing.chargedKeys(account.id, job.id)).toEqual(paid.includes(j) ? paidNames(store, 'gender', keys(j)) : []);
      }
      await cancel(...jobs.map((j) => j.id));
    }
  });

  /*
   * A relay reads the unsent events, inserts their deliveries and marks them sent. Two relays that
   * both read an event before either marks it would both count it as theirs (and, but for the
   * unique (webhook, message) pair, both insert its delivery): the counts would add up to more than
   * the events. Both relays drain the outbox one event a call, so they keep reaching for the same one.
   */
  it('two relays of one outbox event make one delivery', async () => {
    const EVENTS = 10;
    const account = await newAccount(store);
    const webhook = await subscribe(store, account.id);
    for (let round = 0; round < ROUNDS; round++) {
      const ids = Array.from({ length: EVENTS }, (_, i) => `job_${round}_${String(i).padStart(2, '0')}`);
      for (const [i, id] of ids.entries()) {
        await newJob(store, account.id, id, NOW + i);
        await store.jobs.transition(id, 'cancelled', { now: NOW + i });
      }
      const drain = async (relay: Store) => {
        let relayed = 0;
        for (let n = await relay.deliveries.relayOutbox(NOW + round, 1); n > 0; n = await relay.deliveries.relayOutbox(NOW + round, 1)) relayed += n;
        return relayed;
      };
      const [byA, byB] = await Promise.all([drain(a), drain(b)]);
      expect(byA + byB).toBe(EVENTS);
      const deliveries = await store.deliveries.list(webhook, 10_000);
      expect(deliveries).toHaveLength((round + 1) * EVENTS);
      const jobsOf = deliveries.map((d) => (d.payload as { data: { id: string } }).data.id).filter((id) => id.startsWith(`job_${round}_`));
      expect(jobsOf.sort()).toEqual(ids);
    }
  });

  /*
   * A claim inserts the key if absent, or takes over a stale one. Two requests that both read "no
   * claim" or "stale" and then both write would both get `new`: the insert must be conditional
   * (INSERT OR IGNORE / ON CONFLICT DO NOTHING, judged by its row count) and the takeover a
   * compare-and-set on the old claim time, or the whole claim serialised.
   */
  it('two idempotency claims of one key: exactly one is new, fresh or taken over when stale', async () => {
    const STALE = 60_000;
    const KEEP = 86_400_000;
    const KEYS = 50;
    // Both claim the same keys in the same order, so that their claims of one key tend to meet.
    const claimAll = async (claimer: Store, keys: readonly string[]) => {
      const states: string[] = [];
      for (const key of keys) states.push((await claimer.idempotency.claim('acc_1', key, NOW, STALE, KEEP)).state);
      return states;
    };
    for (let round = 0; round < ROUNDS; round++) {
      const fresh = Array.from({ length: KEYS }, (_, i) => `fresh_${round}_${i}`);
      const stale = Array.from({ length: KEYS }, (_, i) => `stale_${round}_${i}`);
      for (const key of stale) await store.idempotency.claim('acc_1', key, NOW - 2 * STALE, STALE, KEEP);
      for (const keys of [fresh, stale]) {
        const [byA, byB] = await Promise.all([claimAll(a, keys), claimAll(b, keys)]);
        expect(keys.map((_, i) => [byA[i], byB[i]].sort())).toEqual(keys.map(() => ['in_flight', 'new']));
      }
    }
  });
});
