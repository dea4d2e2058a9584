import { randomUUID } from 'node:crypto';
import type { BillingKeys } from '../billing-key.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { creditLedgerId } from '../ledger-ids.js';
import type { Account, LedgerEntry } from '../records.js';
import type { BillingPort, LookupCommit } from '../store.js';
import { accountNotFound, BILLED_HASHES, keysOfHashes } from './pg-core-charges.js';
import { commitLookup } from './pg-core-commit-lookup.js';
import { isUniqueViolation, type PgDatabase, type PgQueryable } from './pg-database.js';

const ACCOUNT_COLUMNS = 'id, email, credits, status, rate_limit AS "rateLimit", created_at AS "createdAt"';

/**
 * Accounts, the append-only ledger, the repeat-free billing cache and credit reservations on
 * PostgreSQL. Whatever changes a balance locks the account's row first (READ COMMITTED), so
 * grants, reservations and charges of one account run one after the other.
 */
export class PgBilling implements BillingPort {
  /** Account ids never change their seq, so the mapping can be kept for the process's life. */
  private readonly seqs = new Map<string, number>();

  constructor(
    private readonly db: PgDatabase,
    /** The one place keys become billing-cache names; the cache holds no plain key. */
    private readonly names: BillingKeys,
  ) {}

  async createAccount(input: { id?: string; email?: string | null; passwordHash?: string | null; credits: number; now: number }): Promise<Account> {
    const id = input.id ?? `acc_${randomUUID()}`;
    const email = input.email ?? null;
    if (input.credits > 0) checkAmount(input.credits);
    const taken = (what: string) => new AppError(ERROR_CODES.accountExists, `an account with ${what} exists already`, { statusCode: 409 });
    try {
      await this.db.transaction(async (tx) => {
        if (await readAccount(tx, id)) throw taken(`id ${id}`);
        if (email && (await readCredentials(tx, email))) throw taken(`email ${email}`);
        await tx.query("INSERT INTO accounts (id, email, password_hash, credits, status, created_at) VALUES ($1, $2, $3, 0, 'active', $4)", [
          id,
          email,
          input.passwordHash ?? null,
          input.now,
        ]);
        if (input.credits > 0) await credit(tx, id, input.credits, 'grant', input.now);
      });
    } catch (error) {
      // Two creations racing past the checks above: the unique indexes decide, with the same error.
      if (!isUniqueViolation(error)) throw error;
      throw (error as { constraint?: string }).constraint === 'accounts_email_lower' ? taken(`email ${email}`) : taken(`id ${id}`);
    }
    return this.requireAccount(id);
  }

  account(id: string): Promise<Account | undefined> {
    return readAccount(this.db, id);
  }

  async requireAccount(id: string): Promise<Account> {
    const account = await this.account(id);
    if (!account) throw accountNotFound(id);
    return account;
  }

  credentials(email: string): Promise<{ id: string; passwordHash: string | null; status: string } | undefined> {
    return readCredentials(this.db, email);
  }

  async setStatus(accountId: string, status: Account['status']): Promise<Account> {
    return this.db.transaction(async (tx) => {
      // The UPDATE's row lock orders this against sessions.create, which reads the row FOR SHARE.
      const { rows } = await tx.query<Account>(`UPDATE accounts SET status = $2 WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`, [accountId, status]);
      if (!rows[0]) throw accountNotFound(accountId);
      // A session from before a suspension must not come back to life with a reinstatement.
      if (status === 'suspended') await tx.query('DELETE FROM sessions WHERE account_id = $1', [accountId]);
      return rows[0];
    });
  }

  async setRateLimit(accountId: string, perMinute: number | null): Promise<Account> {
    const { rows } = await this.db.query<Account>(`UPDATE accounts SET rate_limit = $2 WHERE id = $1 RETURNING ${ACCOUNT_COLUMNS}`, [accountId, perMinute]);
    if (!rows[0]) throw accountNotFound(accountId);
    return rows[0];
  }

  async accounts(): Promise<Account[]> {
    return (await this.db.query<Account>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts ORDER BY created_at, seq`)).rows;
  }

  /**
   * Also resumes the account's jobs paused with insufficient_credits, in the same transaction, however
   * small the amount: a job still short pauses again at its next batch (once per batch at most).
   * The account's row is updated first; a checkpoint pausing for credits shares-locks it after its
   * job, so the jobs read here include every such pause that committed before, and a pause that
   * comes later sees the new balance (pg-core-commit-batch). Only paused jobs are locked after the
   * account, and nothing holding a paused job's row waits for an account.
   */
  async addCredits(accountId: string, amount: number, reason: 'grant' | 'topup', now: number): Promise<Account> {
    checkAmount(amount);
    await this.db.transaction(async (tx) => {
      await credit(tx, accountId, amount, reason, now);
      await tx.query(
        `UPDATE job_chunks SET failures = 0
          WHERE job_id IN (SELECT id FROM jobs WHERE account_id = $1 AND status = 'paused' AND reason = 'insufficient_credits')`,
        [accountId],
      );
      await tx.query(
        `UPDATE jobs SET status = 'running', reason = NULL, error_message = NULL, failures = 0, updated_at = $2, finished_at = NULL
          WHERE account_id = $1 AND status = 'paused' AND reason = 'insufficient_credits'`,
        [accountId, now],
      );
    });
    return this.requireAccount(accountId);
  }

  async ledger(accountId: string): Promise<LedgerEntry[]> {
    const { rows } = await this.db.query<LedgerEntry>(
      `SELECT id, account_id AS "accountId", delta, reason, kind, job_id AS "jobId", created_at AS "createdAt"
         FROM ledger WHERE account_id = $1 ORDER BY created_at, id COLLATE "C"`,
      [accountId],
    );
    return rows;
  }

  async chargeCountForJob(jobId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>("SELECT COALESCE(-SUM(delta), 0)::bigint AS n FROM ledger WHERE job_id = $1 AND reason = 'charge'", [jobId]);
    return rows[0]!.n;
  }

  async chargedKeys(accountId: string, jobId: string): Promise<string[]> {
    const { rows } = await this.db.query<{ name: string }>(
      "SELECT encode(b.key_hash, 'hex') AS name FROM billing_cache b JOIN ledger l ON l.seq = b.ledger_seq WHERE b.account_seq = $1 AND l.job_id = $2 ORDER BY b.key_hash",
      [await this.seq(accountId), jobId],
    );
    return rows.map((r) => r.name);
  }

  keyName(kind: string, key: string): string {
    return this.names.name(kind, key);
  }

  async freshlyBilled(accountId: string, kind: string, keys: readonly string[], since: number): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const hashes = await this.names.hashMany(kind, keys);
    // The cache holds keyed hashes, never keys: the answer is hashes, mapped back to the keys given.
    const { rows } = await this.db.query<{ h: Buffer }>(BILLED_HASHES, [await this.seq(accountId), kind, hashes, since]);
    return keysOfHashes(keys, hashes, rows);
  }

  /**
   * Replaces the chunk's earlier reservation, so a worker that died holding one does not leak it
   * past the next attempt. Under the account's row lock: two chunks reserving together cannot both
   * count the same free credits.
   */
  async reserve(accountId: string, jobId: string, chunkIndex: number, wanted: number): Promise<number> {
    // One statement (migration 020): the transaction it replaces took six round trips, and its
    // share lock on the job waited for whole checkpoints of the job's other chunks.
    const { rows } = await this.db
      .query<{ granted: number }>('SELECT sluice_reserve($1, $2, $3, $4)::bigint AS granted', [accountId, jobId, chunkIndex, wanted])
      .catch((error: unknown) => {
        throw (error as { code?: string }).code === 'P0002' ? accountNotFound(accountId) : error;
      });
    return rows[0]!.granted;
  }

  async available(accountId: string): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>(
      'SELECT (a.credits - COALESCE((SELECT SUM(r.amount) FROM credit_reservations r WHERE r.account_id = a.id), 0))::bigint AS n FROM accounts a WHERE a.id = $1',
      [accountId],
    );
    if (!rows[0]) throw accountNotFound(accountId);
    return rows[0].n;
  }

  async balance(accountId: string): Promise<{ credits: number; reserved: number }> {
    const { rows } = await this.db.query<{ credits: number; reserved: number }>(
      'SELECT a.credits, COALESCE((SELECT SUM(r.amount) FROM credit_reservations r WHERE r.account_id = a.id), 0)::bigint AS reserved FROM accounts a WHERE a.id = $1',
      [accountId],
    );
    if (!rows[0]) throw accountNotFound(accountId);
    return rows[0];
  }

  commitLookup(input: LookupCommit): Promise<{ ok: true; credits: number } | { ok: false }> {
    return commitLookup(this.db, this.names, input);
  }

  private async seq(accountId: string): Promise<number> {
    let seq = this.seqs.get(accountId);
    if (seq === undefined) {
      const { rows } = await this.db.query<{ seq: number }>('SELECT seq FROM accounts WHERE id = $1', [accountId]);
      if (!rows[0]) throw accountNotFound(accountId);
      seq = rows[0].seq;
      this.seqs.set(accountId, seq);
    }
    return seq;
  }
}

async function readAccount(db: PgQueryable, id: string): Promise<Account | undefined> {
  return (await db.query<Account>(`SELECT ${ACCOUNT_COLUMNS} FROM accounts WHERE id = $1`, [id])).rows[0];
}

/** SQLite's `email = ? COLLATE NOCASE`; the unique index on lower(email) serves it. */
async function readCredentials(db: PgQueryable, email: string): Promise<{ id: string; passwordHash: string | null; status: string } | undefined> {
  const { rows } = await db.query<{ id: string; passwordHash: string | null; status: string }>(
    'SELECT id, password_hash AS "passwordHash", status FROM accounts WHERE lower(email) = lower($1)',
    [email],
  );
  return rows[0];
}

function checkAmount(amount: number): void {
  if (!Number.isSafeInteger(amount) || amount <= 0) {
    throw new AppError(ERROR_CODES.badArgument, 'credits to add must be a positive whole number', { statusCode: 400 });
  }
}

/** A grant or top-up: the balance change and its ledger line, in the caller's transaction. */
async function credit(tx: PgQueryable, accountId: string, amount: number, reason: 'grant' | 'topup', now: number): Promise<void> {
  const { rowCount } = await tx.query('UPDATE accounts SET credits = credits + $2 WHERE id = $1', [accountId, amount]);
  if (rowCount !== 1) throw accountNotFound(accountId);
  await tx.query("INSERT INTO ledger (id, account_id, delta, reason, kind, job_id, created_at) VALUES ($1, $2, $3, $4, NULL, NULL, $5)", [
    creditLedgerId(),
    accountId,
    amount,
    reason,
    now,
  ]);
}
