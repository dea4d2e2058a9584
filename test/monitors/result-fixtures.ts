import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import type { FieldChange } from '../../src/storage/monitor-result-records.js';
import type { RunStatus } from '../../src/storage/monitor-records.js';
import { openPostgresStore } from '../../src/storage/postgres/pg-store.js';
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { STORE_KINDS, type Store, type StoreKind } from '../../src/storage/store.js';
import type { ApiHarness } from '../support/api-harness.js';
import { freshDatabase } from '../support/postgres-database.js';
import { TEST_SEAL_KEY, tempDir } from '../support/test-engine.js';
import { TEST_HOOKS } from '../support/test-store.js';

/**
 * Runs and snapshots written straight into the tables, as run execution writes them: the read side
 * is tested from the tables alone, on both stores, without an engine job behind each run.
 */
export interface SeedSnapshot {
  target: string;
  data: Record<string, unknown>;
  changes?: Record<string, FieldChange> | null;
}

export interface SeedRun {
  id: string;
  monitorId: string;
  accountId: string;
  createdAt: number;
  status?: RunStatus;
  trigger?: 'schedule' | 'manual';
  jobId?: string | null;
  startedAt?: number | null;
  finishedAt?: number | null;
  totalRecords?: number | null;
  changesDetected?: number | null;
  creditsUsed?: number | null;
  snapshots?: readonly SeedSnapshot[];
}

export type SeedFn = (run: SeedRun) => Promise<void>;

const RUN_SQL = `INSERT INTO monitor_runs (id, monitor_id, account_id, triggered_by, status, job_id, total_records, changes_detected,
  credits_used, started_at, finished_at, created_at)`;

function runValues(r: SeedRun): unknown[] {
  return [r.id, r.monitorId, r.accountId, r.trigger ?? 'manual', r.status ?? 'completed', r.jobId ?? null, r.totalRecords ?? null, r.changesDetected ?? null, r.creditsUsed ?? null, r.startedAt ?? null, r.finishedAt ?? null, r.createdAt];
}

const changesOf = (s: SeedSnapshot) => s.changes ?? null;

export function sqliteSeeder(file: string): { seed: SeedFn; close: () => void } {
  const db = new Database(file);
  db.pragma('busy_timeout = 5000');
  const run = db.prepare(`${RUN_SQL} VALUES (${Array(12).fill('?').join(', ')})`);
  const snapshot = db.prepare('INSERT INTO monitor_snapshots (run_id, seq, target, data, changes, has_changes) VALUES (?, ?, ?, ?, ?, ?)');
  const write = db.transaction((r: SeedRun) => {
    run.run(...runValues(r));
    (r.snapshots ?? []).forEach((s, seq) => {
      const changes = changesOf(s);
      snapshot.run(r.id, seq, s.target, JSON.stringify(s.data), changes === null ? null : JSON.stringify(changes), changes === null ? 0 : 1);
    });
  });
  return { seed: async (r) => void write(r), close: () => db.close() };
}

const PG_BATCH = 2000;

async function postgresSeeder(url: string): Promise<{ seed: SeedFn; close: () => Promise<void> }> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const seed: SeedFn = async (r) => {
    await client.query('BEGIN');
    try {
      await client.query(`${RUN_SQL} VALUES (${runValues(r).map((_, i) => `$${i + 1}`).join(', ')})`, runValues(r));
      const snapshots = r.snapshots ?? [];
      for (let from = 0; from < snapshots.length; from += PG_BATCH) {
        const batch = snapshots.slice(from, from + PG_BATCH);
        await client.query(
          `INSERT INTO monitor_snapshots (run_id, seq, target, data, changes, has_changes)
           SELECT $1, * FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::boolean[])`,
          [
            r.id,
            batch.map((_, i) => from + i),
            batch.map((s) => s.target),
            batch.map((s) => JSON.stringify(s.data)),
            batch.map((s) => (changesOf(s) === null ? null : JSON.stringify(changesOf(s)))),
            batch.map((s) => changesOf(s) !== null),
          ],
        );
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK');
      throw error;
    }
  };
  return { seed, close: () => client.end() };
}

/** A store of `kind` on a fresh database, and a way to seed runs into it. */
export async function openSeededStore(kind: StoreKind): Promise<{ store: Store; seed: SeedFn; close: () => Promise<void> }> {
  if (kind === STORE_KINDS.sqlite) {
    const dir = tempDir('sluice-results-');
    const file = path.join(dir, 'sluice.db');
    const store = openSqliteStore(file, { synchronous: 'NORMAL', busyTimeoutMs: 5000 }, TEST_HOOKS);
    const seeder = sqliteSeeder(file);
    const close = async () => {
      seeder.close();
      await store.close();
      fs.rmSync(dir, { recursive: true, force: true });
    };
    return { store, seed: seeder.seed, close };
  }
  const database = await freshDatabase('monitor_results');
  const store = await openPostgresStore({ url: database.url, poolSize: 4, sealKey: Buffer.from(TEST_SEAL_KEY, 'base64') }, TEST_HOOKS);
  const seeder = await postgresSeeder(database.url);
  return {
    store,
    seed: seeder.seed,
    close: async () => {
      await seeder.close();
      await store.close();
      await database.drop();
    },
  };
}

/** Seeds runs into the database an API harness runs on (its SQLite file, or SLUICE_DATABASE_URL). */
export async function harnessSeeder(h: ApiHarness): Promise<{ seed: SeedFn; close: () => Promise<void> }> {
  const url = h.engine.env.SLUICE_DATABASE_URL;
  if (url) return postgresSeeder(url);
  const seeder = sqliteSeeder(path.join(h.engine.dataDir, 'sluice.db'));
  return { seed: seeder.seed, close: async () => seeder.close() };
}
