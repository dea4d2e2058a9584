import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { chargeLedgerId } from '../../src/storage/ledger-ids.js';
import { migrationFiles } from '../../src/storage/migration-files.js';
import { migratePostgres, PgDatabase } from '../../src/storage/postgres/pg-database.js';
import { openPostgresStore } from '../../src/storage/postgres/pg-store.js';
import { migrate, registerBillingHash } from '../../src/storage/sqlite/open-database.js';
import { openSqliteStore } from '../../src/storage/sqlite/sqlite-store.js';
import { BillingKeys } from '../../src/storage/billing-key.js';
import { STORE_KINDS, type Store, type StoreKind } from '../../src/storage/store.js';
import { freshDatabase } from '../support/postgres-database.js';
import { TEST_STORES, tempDir } from '../support/test-engine.js';
import { batch, claimChunk, newAccount, NOW, processingJob, SINCE, TEST_HOOKS } from '../support/test-store.js';

/**
 * #18 item 6: the billing cache keeps keyed hashes, never the addresses or numbers an account paid
 * for, and still answers "was this paid for" exactly: a paid key read as unpaid would be charged
 * twice. Both stores, opened on a database the test can also read raw.
 */

const SEAL_KEY = Buffer.alloc(32, 0x5a);
const OTHER_SEAL_KEY = Buffer.alloc(32, 0x33);
const SQLITE_OPTIONS = { synchronous: 'NORMAL', busyTimeoutMs: 5000 } as const;
const PAID = ['ann@x.io', 'Bob.Éclair@x.io', '+4930123456'];

interface RawStore {
  open(sealKey: Buffer): Promise<Store>;
  /** Every billing-cache row (on SQLite, the log's too), each column as bytes as the database holds them. */
  rawRows(): Promise<Buffer[][]>;
  /** Builds the database as the previous release left it, with these keys paid for by 'acc_old'. */
  oldFormat(keys: readonly string[], extra?: number): Promise<void>;
  /** What `requireSharedSealKey` of a process with this seal key recorded, written raw. */
  recordFingerprint(fingerprint: string): Promise<void>;
  close(): Promise<void>;
}

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function rawStore(kind: StoreKind): Promise<RawStore> {
  const opened: Store[] = [];
  const track = (store: Store) => {
    opened.push(store);
    return store;
  };
  const closeAll = async () => {
    for (const s of opened.splice(0)) await s.close();
  };
  if (kind === STORE_KINDS.sqlite) {
    const dir = tempDir('sluice-billing-hash-');
    const file = path.join(dir, 'sluice.db');
    return {
      open: async (sealKey) => track(openSqliteStore(file, { ...SQLITE_OPTIONS, sealKey }, TEST_HOOKS)),
      async rawRows() {
        const db = new Database(file, { readonly: true });
        try {
          const rows = db.prepare('SELECT * FROM billing_cache').raw().all() as unknown[][];
          // Charges not yet merged into billing_cache (migration 020; absent from older files).
          const logged = db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'billing_log'").get()
            ? (db.prepare('SELECT account_seq, kind, key_hash, charged_at, ledger_seq FROM billing_log').raw().all() as unknown[][])
            : [];
          return [...rows, ...logged].map((row) => row.map(asBytes));
        } finally {
          db.close();
        }
      },
      async oldFormat(keys, extra = 0) {
        const db = new Database(file);
        try {
          migrate(db, migrationFiles(new URL('../../src/storage/sqlite/migrations/', import.meta.url)).filter((f) => f.version < 17));
          db.prepare("INSERT INTO accounts (seq, id, credits, status, created_at) VALUES (7, 'acc_old', 10, 'active', ?)").run(NOW);
          const line = db.prepare("INSERT INTO ledger (id, account_id, delta, reason, kind, job_id, created_at) VALUES (?, 'acc_old', ?, 'charge', 'gender', 'job_old', ?)").run(chargeLedgerId('acc_old', 'job_old', '0:0'), -keys.length, NOW);
          const row = db.prepare("INSERT INTO billing_cache (account_seq, kind, lookup_key, charged_at, ledger_seq) VALUES (7, 'gender', ?, ?, ?)");
          db.transaction(() => {
            for (const key of keys) row.run(key, NOW, line.lastInsertRowid);
            for (let i = 0; i < extra; i++) row.run(`bulk_${i}@x.io`, NOW, line.lastInsertRowid);
          })();
        } finally {
          db.close();
        }
      },
      async recordFingerprint(fingerprint) {
        const db = new Database(file);
        try {
          db.prepare("INSERT INTO shared_records (name, value) VALUES ('seal-key-fingerprint', ?)").run(fingerprint);
        } finally {
          db.close();
        }
      },
      async close() {
        await closeAll();
        fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  }
  const database = await freshDatabase('billing_hash');
  const query = async (sql: string, params: unknown[] = []) => {
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    try {
      return await client.query({ text: sql, values: params, rowMode: 'array' });
    } finally {
      await client.end();
    }
  };
  return {
    open: async (sealKey) => track(await openPostgresStore({ url: database.url, poolSize: 2, sealKey }, TEST_HOOKS)),
    async rawRows() {
      // Every column as its text output (bytea as \x hex) and, for bytea, its bytes too.
      const { rows } = await query('SELECT * FROM billing_cache');
      return (rows as unknown[][]).map((row) => row.map(asBytes));
    },
    async oldFormat(keys, extra = 0) {
      const db = new PgDatabase({ url: database.url, poolSize: 1 });
      try {
        await migratePostgres(db, undefined, migrationFiles(new URL('../../src/storage/postgres/migrations/', import.meta.url)).filter((f) => f.version < 11));
      } finally {
        await db.close();
      }
      await query("INSERT INTO accounts (seq, id, credits, status, created_at) OVERRIDING SYSTEM VALUE VALUES (7, 'acc_old', 10, 'active', $1)", [NOW]);
      const { rows } = await query("INSERT INTO ledger (id, account_id, delta, reason, kind, job_id, created_at) VALUES ($1, 'acc_old', $2, 'charge', 'gender', 'job_old', $3) RETURNING seq", [
        chargeLedgerId('acc_old', 'job_old', '0:0'),
        -keys.length,
        NOW,
      ]);
      const seq = (rows[0] as unknown[])[0];
      await query("INSERT INTO billing_cache (account_seq, kind, lookup_key, charged_at, ledger_seq) SELECT 7, 'gender', k, $2, $3 FROM unnest($1::text[]) AS k", [keys, NOW, seq]);
      if (extra > 0) {
        await query("INSERT INTO billing_cache (account_seq, kind, lookup_key, charged_at, ledger_seq) SELECT 7, 'gender', 'bulk_' || g || '@x.io', $2, $3 FROM generate_series(0, $1 - 1) AS g", [extra, NOW, seq]);
      }
    },
    async recordFingerprint(fingerprint) {
      await query("INSERT INTO shared_records (name, value) VALUES ('seal-key-fingerprint', $1)", [fingerprint]);
    },
    async close() {
      await closeAll();
      await database.drop();
    },
  };
}

function asBytes(value: unknown): Buffer {
  if (Buffer.isBuffer(value)) return value;
  return Buffer.from(String(value), 'utf8');
}

/** No column of any row holds the key's bytes, as UTF-8 text or lowercase. */
function holdsNoKey(rows: Buffer[][], keys: readonly string[]): void {
  for (const row of rows) {
    for (const cell of row) {
      for (const key of keys) {
        expect(cell.includes(Buffer.from(key, 'utf8')), `a billing row holds ${key}`).toBe(false);
        expect(cell.includes(Buffer.from(key.toLowerCase(), 'utf8')), `a billing row holds ${key}`).toBe(false);
      }
    }
  }
}

/** A second job of the account asking to charge `keys`: refused, since each was paid for. */
async function chargeAgain(store: Store, accountId: string, jobId: string, keys: readonly string[]) {
  const job = await processingJob(store, accountId, jobId, [keys.length]);
  const lease = await claimChunk(store, job.id, 0);
  return store.jobs.commitBatch(batch({ jobId: job.id, accountId, chunkIndex: 0, lease, cursor: 0, rows: keys.length }, { charges: { keys: [[...keys]] } }));
}

describe.each(TEST_STORES)('the billing cache keeps keyed hashes, not keys (%s)', (kind) => {
  it('holds no paid key, bulk or single, and a repeat is still recognised and refused', async () => {
    const raw = await rawStore(kind);
    cleanups.push(() => raw.close());
    const store = await raw.open(SEAL_KEY);
    const account = await newAccount(store, 20);
    const job = await processingJob(store, account.id, 'job_1', [5]);
    const lease = await claimChunk(store, job.id, 0);
    expect(await store.jobs.commitBatch(batch({ jobId: job.id, accountId: account.id, chunkIndex: 0, lease, cursor: 0, rows: 3 }, { charges: { keys: [PAID] } }))).toMatchObject({ ok: true });
    expect(await store.billing.commitLookup({ accountId: account.id, kind: 'gender', charge: { type: 'repeat_free', key: 'single@x.io', since: SINCE, batchId: 'b1' }, cache: [], now: NOW })).toEqual({ ok: true, credits: 1 });

    const rows = await raw.rawRows();
    expect(rows).toHaveLength(4);
    holdsNoKey(rows, [...PAID, 'single@x.io']);

    expect(await store.billing.freshlyBilled(account.id, 'gender', [...PAID, 'single@x.io', 'new@x.io'], SINCE)).toEqual(new Set([...PAID, 'single@x.io']));
    // The kind is part of the name: the same text under another kind was never paid for.
    expect(await store.billing.freshlyBilled(account.id, 'company', PAID, SINCE)).toEqual(new Set());
    expect(await chargeAgain(store, account.id, 'job_2', [PAID[0]!, 'new@x.io'])).toEqual({ ok: false, billed: [new Set([PAID[0]])], balance: 16 });
    expect(await store.billing.commitLookup({ accountId: account.id, kind: 'gender', charge: { type: 'repeat_free', key: 'single@x.io', since: SINCE, batchId: 'b2' }, cache: [], now: NOW + 1 })).toEqual({ ok: true, credits: 0 });
    expect((await store.billing.requireAccount(account.id)).credits).toBe(16);
    expect(await store.billing.chargedKeys(account.id, job.id)).toEqual(PAID.map((k) => store.billing.keyName('gender', k)).sort());
  });

  it('migrates plain keys of the previous release to hashes, and every key paid for stays free in the window', async () => {
    const raw = await rawStore(kind);
    cleanups.push(() => raw.close());
    // More rows than one of PostgreSQL's fill batches (10,000), so that paging is exercised.
    const extra = kind === STORE_KINDS.postgres ? 12_345 : 2_000;
    await raw.oldFormat(PAID, extra);
    expect((await raw.rawRows()).some((row) => row.some((cell) => cell.includes(Buffer.from(PAID[0]!))))).toBe(true);

    const store = await raw.open(SEAL_KEY);
    const rows = await raw.rawRows();
    expect(rows).toHaveLength(PAID.length + extra);
    holdsNoKey(rows, [...PAID, 'bulk_0@x.io', `bulk_${extra - 1}@x.io`]);
    const bulk = Array.from({ length: extra }, (_, i) => `bulk_${i}@x.io`);
    expect(await store.billing.freshlyBilled('acc_old', 'gender', [...PAID, 'never@x.io'], SINCE)).toEqual(new Set(PAID));
    expect((await store.billing.freshlyBilled('acc_old', 'gender', bulk, SINCE)).size).toBe(extra);
    expect(await chargeAgain(store, 'acc_old', 'job_new', [PAID[1]!])).toEqual({ ok: false, billed: [new Set([PAID[1]])], balance: 10 });
    expect(await store.billing.chargedKeys('acc_old', 'job_old')).toHaveLength(PAID.length + extra);
    expect((await store.billing.requireAccount('acc_old')).credits).toBe(10);
  });

  it('refuses to hash an old database with a seal key other than the one it records, and leaves it whole', async () => {
    const raw = await rawStore(kind);
    cleanups.push(() => raw.close());
    await raw.oldFormat(PAID);
    // The fingerprint a process with SEAL_KEY recorded (requireSharedSealKey) before the upgrade.
    await raw.recordFingerprint(new BillingKeys(SEAL_KEY).fingerprint);
    await expect(raw.open(OTHER_SEAL_KEY)).rejects.toThrow(/SLUICE_SEAL_KEY differs/);
    expect((await raw.rawRows()).filter((row) => row.some((cell) => cell.includes(Buffer.from(PAID[2]!))))).toHaveLength(1);
    const store = await raw.open(SEAL_KEY);
    expect(await store.billing.freshlyBilled('acc_old', 'gender', PAID, SINCE)).toEqual(new Set(PAID));
  });
});
