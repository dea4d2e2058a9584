import type { BillingKeys } from '../billing-key.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { PgQueryable } from './pg-database.js';
import type { LedgerEntry } from '../records.js';

export function accountNotFound(id: string): AppError {
  return new AppError(ERROR_CODES.accountNotFound, `no account ${id}`, { statusCode: 404 });
}

/**
 * The account's row, locked until the transaction ends. Every charge and reservation of the
 * account takes this lock first, so the balance check, the repeat-free check and the debit of
 * one charge see no other charge of the account half done: two jobs racing for one key charge
 * it once, and two racing for the last credit cannot both get it.
 */
export async function lockAccount(tx: PgQueryable, accountId: string): Promise<{ seq: number; credits: number }> {
  const { rows } = await tx.query<{ seq: number; credits: number }>('SELECT seq, credits FROM accounts WHERE id = $1 FOR UPDATE', [accountId]);
  if (!rows[0]) throw accountNotFound(accountId);
  return rows[0];
}

/**
 * The locked account's balance less what running chunks have reserved, `own` chunk's reservation
 * excepted (a single lookup has none). A charge never spends credits another chunk holds: a batch
 * of a job that has just paused (and so lost its reservation) must not take what another job
 * reserved. Reservations change only under the account's lock, so the sum is stable here.
 */
export async function spendable(tx: PgQueryable, accountId: string, credits: number, own: { jobId: string; chunkIndex: number } | undefined): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    'SELECT COALESCE(SUM(amount), 0)::bigint AS n FROM credit_reservations WHERE account_id = $1 AND NOT (job_id = $2 AND chunk_index = $3)',
    [accountId, own?.jobId ?? '', own?.chunkIndex ?? -1],
  );
  return credits - rows[0]!.n;
}

/**
 * Which of an account's keys of one kind it paid for after `$4`. `key_hash = ANY($3)` is one probe
 * of the primary key per hash whatever the table holds; the join of an unnest against the table it
 * replaces was planned as a sequential scan of billing_cache until the table held about 150,000
 * keys (the planner costs the join, not the probe), and every early check read the whole table.
 * test/storage/pg-billing-plan.test.ts checks the plan at 0, 10,000 and many keys.
 */
export const BILLED_HASHES = `SELECT key_hash AS h FROM billing_cache
  WHERE account_seq = $1 AND kind = $2 AND key_hash = ANY($3::bytea[]) AND charged_at > $4`;

/** The keys whose hashes came back from BILLED_HASHES. */
export function keysOfHashes(keys: readonly string[], hashes: readonly Buffer[], rows: readonly { h: Buffer }[]): Set<string> {
  const billed = new Set<string>();
  if (rows.length === 0) return billed;
  const byHash = new Map<string, string>();
  hashes.forEach((h, i) => byHash.set(h.toString('hex'), keys[i]!));
  for (const { h } of rows) {
    const key = byHash.get(h.toString('hex'));
    if (key !== undefined) billed.add(key);
  }
  return billed;
}

/**
 * Per kind index, which of its keys the account paid for after `since`: one BILLED_HASHES probe
 * per kind that has keys (a job has one to three kinds).
 */
export async function billedAfter(
  tx: PgQueryable,
  names: BillingKeys,
  accountSeq: number,
  kinds: readonly string[],
  keys: readonly (readonly string[])[],
  since: number,
): Promise<Set<string>[]> {
  const billed: Set<string>[] = [];
  for (const [k, kind] of kinds.entries()) {
    const kindKeys = keys[k] ?? [];
    if (kindKeys.length === 0) {
      billed.push(new Set());
      continue;
    }
    const hashes = kindKeys.map((key) => names.hash(kind, key));
    const { rows } = await tx.query<{ h: Buffer }>(BILLED_HASHES, [accountSeq, kind, hashes, since]);
    billed.push(keysOfHashes(kindKeys, hashes, rows));
  }
  return billed;
}

/** Takes `amount` from a balance the caller has locked and checked; it cannot fail then. */
export async function debit(tx: PgQueryable, accountId: string, amount: number): Promise<void> {
  const { rowCount } = await tx.query('UPDATE accounts SET credits = credits - $2 WHERE id = $1 AND credits >= $2', [accountId, amount]);
  if (rowCount !== 1) throw new AppError(ERROR_CODES.internal, `balance of ${accountId} changed inside a transaction`);
}

/** A ledger entry to write: its time is the operation's `now`. */
export type LedgerLine = Omit<LedgerEntry, 'createdAt'> & { now: number };

/** The line's `seq`, or undefined when a line with its id exists already (a replayed charge). */
export async function insertLedgerLine(tx: PgQueryable, line: LedgerLine): Promise<number | undefined> {
  const { rows } = await tx.query<{ seq: number }>(
    `INSERT INTO ledger (id, account_id, delta, reason, kind, job_id, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)
     ON CONFLICT (id) DO NOTHING RETURNING seq`,
    [line.id, line.accountId, line.delta, line.reason, line.kind, line.jobId, line.now],
  );
  return rows[0]?.seq;
}

/**
 * Records that the account paid for these keys now, and with which ledger line, in one statement.
 * One (kind, key) given twice keeps the last line, as one upsert after the other would; a
 * statement that touched the row twice would fail instead.
 */
export async function recordBilled(
  tx: PgQueryable,
  names: BillingKeys,
  accountSeq: number,
  billed: readonly { kind: string; key: string; ledgerSeq: number }[],
  now: number,
): Promise<void> {
  if (billed.length === 0) return;
  const last = new Map<string, { kind: string; key: string; ledgerSeq: number }>();
  for (const b of billed) last.set(`${b.kind}\0${b.key}`, b);
  const rows = [...last.values()];
  await tx.query(
    `INSERT INTO billing_cache (account_seq, kind, key_hash, charged_at, ledger_seq)
     SELECT $1, t.kind, t.key_hash, $2, t.ledger_seq FROM unnest($3::text[], $4::bytea[], $5::bigint[]) AS t(kind, key_hash, ledger_seq)
     ON CONFLICT (account_seq, kind, key_hash) DO UPDATE SET charged_at = EXCLUDED.charged_at, ledger_seq = EXCLUDED.ledger_seq`,
    [accountSeq, now, rows.map((r) => r.kind), rows.map((r) => names.hash(r.kind, r.key)), rows.map((r) => r.ledgerSeq)],
  );
}
