import type { BillingKeys } from '../billing-key.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { MigrationFile } from '../migration-files.js';
import type { PgQueryable } from './pg-queryable.js';

/** Where, in a migration's SQL, the runner hashes the billing cache's plain keys (011). */
export const FILL_BILLING_HASHES = '-- sluice:fill-billing-key-hashes';
const BATCH = 10_000;

/**
 * Runs one migration file inside the runner's transaction. A file with the fill marker has its SQL
 * run in two parts, with the billing cache's keys hashed in between: the seal key checked first,
 * since hashing with another machine's key would make every paid key read as unpaid.
 */
export async function applyMigration(tx: PgQueryable, file: MigrationFile, names: BillingKeys | undefined): Promise<void> {
  const at = file.sql.indexOf(FILL_BILLING_HASHES);
  if (at < 0) {
    await tx.query(file.sql);
    return;
  }
  await tx.query(file.sql.slice(0, at));
  await fillBillingHashes(tx, names);
  await tx.query(file.sql.slice(at + FILL_BILLING_HASHES.length));
}

async function fillBillingHashes(tx: PgQueryable, names: BillingKeys | undefined): Promise<void> {
  const any = await tx.query('SELECT 1 FROM billing_cache LIMIT 1');
  if (any.rows.length === 0) return;
  if (!names) throw new AppError(ERROR_CODES.badConfig, 'hashing the billing cache (migration 011) needs the seal key: open the store with SLUICE_SEAL_KEY');
  await requireSealKey(tx, names.fingerprint);
  let after: { seq: number; kind: string; key: string } | undefined;
  for (;;) {
    // Keyset pages in primary-key order: each row is read once however large the table.
    const { rows } = await tx.query<{ seq: number; kind: string; key: string }>(
      after
        ? 'SELECT account_seq AS seq, kind, lookup_key AS key FROM billing_cache WHERE (account_seq, kind, lookup_key) > ($1, $2, $3) ORDER BY account_seq, kind, lookup_key LIMIT $4'
        : 'SELECT account_seq AS seq, kind, lookup_key AS key FROM billing_cache ORDER BY account_seq, kind, lookup_key LIMIT $1',
      after ? [after.seq, after.kind, after.key, BATCH] : [BATCH],
    );
    if (rows.length === 0) return;
    await tx.query(
      `UPDATE billing_cache b SET key_hash = t.key_hash
         FROM unnest($1::bigint[], $2::text[], $3::text[], $4::bytea[]) AS t(seq, kind, key, key_hash)
        WHERE b.account_seq = t.seq AND b.kind = t.kind AND b.lookup_key = t.key`,
      [rows.map((r) => r.seq), rows.map((r) => r.kind), rows.map((r) => r.key), rows.map((r) => names.hash(r.kind, r.key))],
    );
    after = rows[rows.length - 1];
  }
}

/** As `requireSharedSealKey` in open-engine.ts, inside the migration: records ours when none is. */
async function requireSealKey(tx: PgQueryable, fingerprint: string): Promise<void> {
  await tx.query("INSERT INTO shared_records (name, value) VALUES ('seal-key-fingerprint', $1) ON CONFLICT (name) DO NOTHING", [fingerprint]);
  const { rows } = await tx.query<{ value: string | null }>("SELECT value FROM shared_records WHERE name = 'seal-key-fingerprint'");
  if (rows[0]?.value !== fingerprint) {
    throw new AppError(
      ERROR_CODES.badConfig,
      'SLUICE_SEAL_KEY differs from the key the other processes on this database seal with: every machine that shares a database must be given the same SLUICE_SEAL_KEY',
      { details: { variable: 'SLUICE_SEAL_KEY' } },
    );
  }
}
