import { afterEach, describe, expect, it } from 'vitest';
import pg from 'pg';
import { BillingKeys } from '../../src/storage/billing-key.js';
import type { BatchOutput, JobRecord, Lease, RowCounters } from '../../src/storage/job-records.js';
import { migrationFiles } from '../../src/storage/migration-files.js';
import { PgBilling } from '../../src/storage/postgres/pg-billing.js';
import { migratePostgres, PgDatabase } from '../../src/storage/postgres/pg-database.js';
import { PgJobs } from '../../src/storage/postgres/pg-jobs.js';
import type { BatchCommit, StoreHooks } from '../../src/storage/store.js';
import { freshDatabase, poolScope, postgresServerUrl } from '../support/postgres-database.js';
import { TEST_SEAL_KEY } from '../support/test-engine.js';

/**
 * The one-call checkpoint (migration 020): what it holds of the job's row and for how long, that a
 * pause still waits for it, and that a job in flight when the migration is applied goes on. Since
 * migration 035 it writes new billing rows without ON CONFLICT: a key paid for before the repeat-free
 * window must then be updated, not inserted a second time.
 */
const NAMES = new BillingKeys(Buffer.from(TEST_SEAL_KEY, 'base64'));
const NOW = 1_700_000_000_000;
const LEASE_MS = 60_000;
const SINCE = NOW - 180 * 86_400_000;
const hooks: StoreHooks = {
  jobEnded: (job: JobRecord, now: number) => ({ id: `evt_${job.id}_${now}`, event: 'bulk.completed', accountId: job.accountId, payload: {} }),
};

const scope = poolScope();
afterEach(() => scope.closeAll());

function output(n: number): BatchOutput {
  const rowEnds = Buffer.alloc(n * 4);
  let allText = '';
  for (let i = 0; i < n; i++) {
    allText += `row${i},ok\n`;
    rowEnds.writeUInt32LE(allText.length, i * 4);
  }
  return { allText, rowEnds, rowFlags: Buffer.alloc(n) };
}

function batch(job: JobRecord, chunkIndex: number, lease: Lease, cursor: number, keys: string[], counters: Partial<RowCounters> = {}): BatchCommit {
  return {
    jobId: job.id,
    accountId: job.accountId,
    chunkIndex,
    lease,
    cursor,
    rows: keys.length,
    output: output(keys.length),
    counters: { processed: keys.length, found: 0, invalid: 0, duplicate: 0, error: 0, credits: keys.length, ...counters },
    charges: { kinds: ['gender'], keys: [keys], batchId: `${chunkIndex}:${cursor}`, since: SINCE },
    cache: [],
    outOfCredits: false,
    now: NOW,
  };
}

async function processingJob(jobs: PgJobs, accountId: string, id: string, chunks: number, rowsPerChunk = 10): Promise<JobRecord> {
  await jobs.create({ id, accountId, type: 'gender', inputKey: `inputs/${id}.csv`, inputName: null, options: {}, now: NOW });
  const claim = await jobs.acquireJobPhase('splitter', NOW, LEASE_MS);
  await jobs.finishSplit(
    id,
    claim!.lease,
    { header: ['email'], keyColumn: 0, totalRows: chunks * rowsPerChunk, chunks: Array.from({ length: chunks }, (_, i) => ({ firstRow: i * rowsPerChunk, rowCount: rowsPerChunk })) },
    NOW,
  );
  return jobs.require(id);
}

/** A fresh database with an account of 100 credits and a two-chunk job in its process phase. */
async function twoChunkJob(name: string): Promise<{ url: string; db: PgDatabase; jobs: PgJobs; billing: PgBilling; job: JobRecord }> {
  const { url, pools } = await scope.open(`pg_ckpt_${name}`, 1);
  const db = pools[0]!;
  const jobs = new PgJobs(db, hooks, NAMES);
  const billing = new PgBilling(db, NAMES);
  await billing.createAccount({ id: 'acc', credits: 100, now: NOW });
  return { url, db, jobs, billing, job: await processingJob(jobs, 'acc', `job_${name}`, 2) };
}

describe.skipIf(!postgresServerUrl())('PostgreSQL checkpoint in one call', () => {
  it("a reservation and another chunk's checks do not wait for a checkpoint in flight; its counters' update is the only wait", async () => {
    const { url, db, jobs, billing, job } = await twoChunkJob('side');
    const lease0 = (await jobs.acquireChunk('w0', NOW, LEASE_MS))!.lease;
    const lease1 = (await jobs.acquireChunk('w1', NOW, LEASE_MS))!.lease;

    // Chunk 1's checkpoint, committed by hand later: its locks stay held meanwhile. No charges, so
    // it holds its chunk's row and the job's row (shared, then for its counters), nothing of the account.
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    const blocked = new Promise((resolve) => setTimeout(() => resolve('blocked'), 3_000));
    try {
      await other.query('BEGIN');
      const held = await other.query<{ outcome: string }>(
        `SELECT outcome FROM sluice_checkpoint($1, 1, $2, 'w1', 0, 2, 'acc', ARRAY['gender'], '{}'::int[], '{}'::bytea[], $3, ARRAY['x'],
           '{}'::text[], '{}'::text[], '{}'::text[], 'a\nb\n', '\\x0000'::bytea, '\\x0200000004000000'::bytea, ARRAY[2,0,0,0,0,0]::bigint[], NULL, false, $4)`,
        [job.id, lease1.epoch, SINCE, NOW],
      );
      expect(held.rows[0]!.outcome).toBe('ok');
      // A reservation of the same job does not wait (the transaction of statements held the job's
      // row for update from its second statement, and reservations queued behind it).
      expect(await Promise.race([billing.reserve('acc', job.id, 0, 5), blocked])).toBe(5);
      // Chunk 0's checkpoint runs its checks and charges, and waits only at the counters' update.
      const committing = jobs.commitBatch(batch(job, 0, lease0, 0, ['a@x.org', 'b@x.org', 'c@x.org']));
      await new Promise((resolve) => setTimeout(resolve, 300));
      const waiting = await db.query<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE '%sluice_checkpoint%'",
      );
      expect(waiting.rows[0]!.n).toBe(1);
      await other.query('COMMIT');
      expect(await committing).toEqual({ ok: true, paused: false, failed: false });
    } finally {
      await other.end();
    }
    expect(await jobs.require(job.id)).toMatchObject({ processedRows: 5, creditsUsed: 3 });
    expect((await billing.requireAccount('acc')).credits).toBe(97);
  });

  it('a pause waits for a checkpoint in flight, and a checkpoint after the pause writes nothing', async () => {
    const { url, jobs, billing, job } = await twoChunkJob('pause');
    const lease0 = (await jobs.acquireChunk('w0', NOW, LEASE_MS))!.lease;
    const other = new pg.Client({ connectionString: url });
    await other.connect();
    try {
      await other.query('BEGIN');
      // What a checkpoint in flight holds of the job.
      await other.query('SELECT status FROM jobs WHERE id = $1 FOR KEY SHARE', [job.id]);
      let paused = false;
      const pausing = jobs.transition(job.id, 'paused', { reason: 'user', now: NOW }).then(() => (paused = true));
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(paused).toBe(false);
      await other.query('COMMIT');
      await pausing;
    } finally {
      await other.end();
    }
    expect(await jobs.commitBatch(batch(job, 0, lease0, 0, ['a@x.org']))).toEqual({ ok: true, paused: true, failed: false });
    expect(await jobs.require(job.id)).toMatchObject({ status: 'paused', processedRows: 0, creditsUsed: 0 });
    expect((await billing.requireAccount('acc')).credits).toBe(100);
  });

  it('a key paid for before the repeat-free window is charged again: its billing row updated, the new keys inserted (migration 035)', async () => {
    const { db, jobs, billing, job } = await twoChunkJob('stale');
    const lease0 = (await jobs.acquireChunk('w0', NOW, LEASE_MS))!.lease;
    const lease1 = (await jobs.acquireChunk('w1', NOW, LEASE_MS))!.lease;
    expect(await jobs.commitBatch(batch(job, 0, lease0, 0, ['old@x.org', 'also@x.org']))).toEqual({ ok: true, paused: false, failed: false });
    // 200 days on: the window (180 days) no longer covers the first charges.
    const later = NOW + 200 * 86_400_000;
    const again = { ...batch(job, 1, lease1, 0, ['old@x.org', 'new@x.org']), now: later };
    again.charges = { ...again.charges, since: later - 180 * 86_400_000 };
    expect(await jobs.commitBatch(again)).toEqual({ ok: true, paused: false, failed: false });
    const { rows } = await db.query<{ charged: string; n: string }>(
      "SELECT charged_at::text AS charged, count(*)::text AS n FROM billing_cache GROUP BY charged_at ORDER BY charged_at",
    );
    // old@x.org's row moved to the new charge; also@x.org keeps the first; new@x.org is new.
    expect(rows).toEqual([
      { charged: String(NOW), n: '1' },
      { charged: String(later), n: '2' },
    ]);
    expect((await db.query('SELECT 1 FROM billing_cache b JOIN ledger l ON l.seq = b.ledger_seq WHERE l.created_at = $1', [later])).rowCount).toBe(2);
    expect((await billing.requireAccount('acc')).credits).toBe(96);
    // Within the window the key just charged is refused by the probe, as before: nothing written.
    const third = { ...batch(job, 0, lease0, 2, ['new@x.org']), now: later };
    third.charges = { ...third.charges, since: later - 180 * 86_400_000 };
    const refused = await jobs.commitBatch(third);
    expect(refused).toMatchObject({ ok: false });
    expect([...(refused as { billed: Set<string>[] }).billed[0]!]).toEqual(['new@x.org']);
    expect((await billing.requireAccount('acc')).credits).toBe(96);
  });

  it('a job in flight when migration 020 is applied goes on from its cursor with the one-call checkpoint', async () => {
    const database = scope.database(await freshDatabase('pg_ckpt_migrate'));
    const db = scope.pool(new PgDatabase({ url: database.url, poolSize: 4 }));
    const all = migrationFiles(new URL('../../src/storage/postgres/migrations/', import.meta.url));
    await migratePostgres(db, NAMES, all.filter((f) => f.version < 20));
    const billing = new PgBilling(db, NAMES);
    await billing.createAccount({ id: 'acc', credits: 100, now: NOW });
    // Rows as the old adapter left them: 4 rows of chunk 0 committed, 3 of them charged.
    await db.query(
      `INSERT INTO jobs (id, account_id, type, status, phase, input_key, options, header, key_column, total_rows, chunk_count,
         processed_rows, found_rows, error_rows, credits_used, created_at, updated_at, started_at)
       VALUES ('job_old', 'acc', 'gender', 'running', 'process', 'inputs/x.csv', '{}', '["email"]', 0, 20, 2, 4, 1, 1, 3, $1, $1, $1)`,
      [NOW],
    );
    await db.query(`INSERT INTO job_chunks (job_id, chunk_index, first_row, row_count, cursor) VALUES ('job_old', 0, 0, 10, 4), ('job_old', 1, 10, 10, 0)`);
    await migratePostgres(db, NAMES, all);
    const jobs = new PgJobs(db, hooks, NAMES);
    const job = await jobs.require('job_old');
    const claim = (await jobs.acquireChunk('w0', NOW, LEASE_MS))!;
    expect([claim.chunk.chunkIndex, claim.chunk.cursor]).toEqual([0, 4]);
    // A lease from before the migration (epoch 0, no owner) is fenced out as before.
    await expect(jobs.commitBatch(batch(job, 0, { owner: 'old', epoch: 0 }, 4, ['z@x.org']))).rejects.toMatchObject({ code: 'lease_lost' });
    expect(await jobs.commitBatch(batch(job, 0, claim.lease, 4, ['a@x.org', 'b@x.org'], { found: 2 }))).toEqual({ ok: true, paused: false, failed: false });
    expect(await jobs.require('job_old')).toMatchObject({ processedRows: 6, foundRows: 3, errorRows: 1, creditsUsed: 5 });
    expect((await jobs.chunk('job_old', 0))!.cursor).toBe(6);
    expect((await billing.requireAccount('acc')).credits).toBe(98);
  });
});
