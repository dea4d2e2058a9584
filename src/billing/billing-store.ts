import { randomUUID } from 'node:crypto';
import type { Db } from '../storage/sqlite/open-database.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { chargeLedgerId, creditLedgerId } from './ledger-ids.js';

export interface Account {
  id: string;
  email: string | null;
  credits: number;
  status: string;
  createdAt: number;
}

export interface LedgerEntry {
  id: string;
  accountId: string;
  delta: number;
  reason: string;
  kind: string | null;
  lookupKey: string | null;
  jobId: string | null;
  createdAt: number;
}

/**
 * Accounts, the append-only ledger, the repeat-free billing cache and credit reservations.
 * Every method is synchronous so that callers can compose them inside one checkpoint transaction.
 */
export class BillingStore {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insertAccount: db.prepare('INSERT INTO accounts (id, email, password_hash, credits, status, created_at) VALUES (?, ?, ?, 0, ?, ?)'),
      account: db.prepare('SELECT id, email, credits, status, created_at AS createdAt FROM accounts WHERE id = ?'),
      accounts: db.prepare('SELECT id, email, credits, status, created_at AS createdAt FROM accounts ORDER BY created_at'),
      addCredits: db.prepare('UPDATE accounts SET credits = credits + ? WHERE id = ?'),
      spendOne: db.prepare('UPDATE accounts SET credits = credits - 1 WHERE id = ? AND credits >= 1'),
      insertLedger: db.prepare(
        'INSERT OR IGNORE INTO ledger (id, account_id, delta, reason, kind, lookup_key, job_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      ledgerForAccount: db.prepare(
        'SELECT id, account_id AS accountId, delta, reason, kind, lookup_key AS lookupKey, job_id AS jobId, created_at AS createdAt FROM ledger WHERE account_id = ? ORDER BY created_at, id',
      ),
      chargesForJob: db.prepare("SELECT COUNT(*) AS n FROM ledger WHERE job_id = ? AND reason = 'charge'"),
      freshBilled: db.prepare(
        'SELECT lookup_key AS key FROM billing_cache WHERE account_id = ? AND kind = ? AND charged_at > ? AND lookup_key IN (SELECT value FROM json_each(?))',
      ),
      billedAt: db.prepare('SELECT charged_at AS chargedAt FROM billing_cache WHERE account_id = ? AND kind = ? AND lookup_key = ?'),
      upsertBilling: db.prepare(
        'INSERT INTO billing_cache (account_id, kind, lookup_key, charged_at, ledger_id) VALUES (?, ?, ?, ?, ?) ON CONFLICT (account_id, kind, lookup_key) DO UPDATE SET charged_at = excluded.charged_at, ledger_id = excluded.ledger_id',
      ),
      reservedByOthers: db.prepare(
        'SELECT COALESCE(SUM(amount), 0) AS n FROM credit_reservations WHERE account_id = ? AND NOT (job_id = ? AND chunk_index = ?)',
      ),
      reservedTotal: db.prepare('SELECT COALESCE(SUM(amount), 0) AS n FROM credit_reservations WHERE account_id = ?'),
      upsertReservation: db.prepare(
        'INSERT INTO credit_reservations (job_id, chunk_index, account_id, amount) VALUES (?, ?, ?, ?) ON CONFLICT (job_id, chunk_index) DO UPDATE SET amount = excluded.amount',
      ),
      deleteReservation: db.prepare('DELETE FROM credit_reservations WHERE job_id = ? AND chunk_index = ?'),
      deleteJobReservations: db.prepare('DELETE FROM credit_reservations WHERE job_id = ?'),
    };
  }

  createAccount(input: { id?: string; email?: string | null; passwordHash?: string | null; credits: number; now: number }): Account {
    const id = input.id ?? `acc_${randomUUID()}`;
    this.db.transaction(() => {
      this.stmts.insertAccount.run(id, input.email ?? null, input.passwordHash ?? null, 'active', input.now);
      if (input.credits > 0) this.addCredits(id, input.credits, 'grant', input.now);
    })();
    return this.requireAccount(id);
  }

  account(id: string): Account | undefined {
    return this.stmts.account.get(id) as Account | undefined;
  }

  requireAccount(id: string): Account {
    const account = this.account(id);
    if (!account) throw new AppError(ERROR_CODES.accountNotFound, `no account ${id}`, { statusCode: 404 });
    return account;
  }

  accounts(): Account[] {
    return this.stmts.accounts.all() as Account[];
  }

  /** Grants and top-ups: one ledger line and the balance change, together. */
  addCredits(accountId: string, amount: number, reason: 'grant' | 'topup', now: number): Account {
    if (!Number.isSafeInteger(amount) || amount <= 0) {
      throw new AppError(ERROR_CODES.badArgument, 'credits to add must be a positive whole number', { statusCode: 400 });
    }
    this.db.transaction(() => {
      this.requireAccount(accountId);
      this.stmts.insertLedger.run(creditLedgerId(), accountId, amount, reason, null, null, null, now);
      this.stmts.addCredits.run(amount, accountId);
    })();
    return this.requireAccount(accountId);
  }

  ledger(accountId: string): LedgerEntry[] {
    return this.stmts.ledgerForAccount.all(accountId) as LedgerEntry[];
  }

  chargeCountForJob(jobId: string): number {
    return (this.stmts.chargesForJob.get(jobId) as { n: number }).n;
  }

  /** Keys this account paid for after `since`: their repeats are free. One query per batch. */
  freshlyBilled(accountId: string, kind: string, keys: readonly string[], since: number): Set<string> {
    if (keys.length === 0) return new Set();
    const rows = this.stmts.freshBilled.all(accountId, kind, since, JSON.stringify(keys)) as { key: string }[];
    return new Set(rows.map((r) => r.key));
  }

  /**
   * Charges one credit for a key unless the account paid for it after `since`. Must run inside the
   * checkpoint transaction. Returns the credits charged (0 or 1), or 'insufficient' when the
   * balance is 0, in which case nothing was written.
   */
  chargeOnce(accountId: string, kind: string, key: string, jobId: string, now: number, since: number): 0 | 1 | 'insufficient' {
    const billed = this.stmts.billedAt.get(accountId, kind, key) as { chargedAt: number } | undefined;
    if (billed && billed.chargedAt > since) return 0;
    const ledgerId = chargeLedgerId(accountId, kind, key, jobId);
    if (this.stmts.spendOne.run(accountId).changes === 0) return 'insufficient';
    if (this.stmts.insertLedger.run(ledgerId, accountId, -1, 'charge', kind, key, jobId, now).changes === 0) {
      // This job already paid for this key (a window that closed mid-job): give the credit back.
      this.stmts.addCredits.run(1, accountId);
      return 0;
    }
    this.stmts.upsertBilling.run(accountId, kind, key, now, ledgerId);
    return 1;
  }

  /**
   * Sets this chunk's reservation to as much of `wanted` as the account can cover beside every
   * other reservation, and returns what was granted. Replaces the chunk's earlier reservation, so a
   * worker that died holding one does not leak it past the next attempt.
   */
  reserve(accountId: string, jobId: string, chunkIndex: number, wanted: number): number {
    return this.db
      .transaction(() => {
        const account = this.requireAccount(accountId);
        const others = (this.stmts.reservedByOthers.get(accountId, jobId, chunkIndex) as { n: number }).n;
        const granted = Math.max(0, Math.min(wanted, account.credits - others));
        this.stmts.upsertReservation.run(jobId, chunkIndex, accountId, granted);
        return granted;
      })
      .immediate();
  }

  releaseReservation(jobId: string, chunkIndex: number): void {
    this.stmts.deleteReservation.run(jobId, chunkIndex);
  }

  releaseJobReservations(jobId: string): void {
    this.stmts.deleteJobReservations.run(jobId);
  }

  /** Balance not set aside by running chunks. */
  available(accountId: string): number {
    const account = this.requireAccount(accountId);
    return account.credits - (this.stmts.reservedTotal.get(accountId) as { n: number }).n;
  }
}
