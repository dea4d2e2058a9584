import { randomUUID } from 'node:crypto';
import type { Db } from '../storage/sqlite/open-database.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { chargeLedgerId, creditLedgerId } from './ledger-ids.js';

export interface Account {
  id: string;
  email: string | null;
  credits: number;
  status: 'active' | 'suspended';
  /** Requests per rolling minute; null means the configured default. */
  rateLimit: number | null;
  createdAt: number;
}

export interface LedgerEntry {
  id: string;
  accountId: string;
  delta: number;
  reason: string;
  kind: string | null;
  jobId: string | null;
  createdAt: number;
}

/** What one checkpoint batch paid for. */
export interface BatchCharge {
  /** Keys charged now, each 1 credit. */
  charged: Set<string>;
  /** Index (into the keys given) of the first key the balance could not pay for, if any. */
  unpaidFrom: number | undefined;
}

/** What one checkpoint batch of several lookups paid for. */
export interface RowsCharge {
  /** Keys charged now, each 1 credit, by kind index. */
  charged: Set<string>[];
  /** The first row the balance could not pay for, if any; no item of it was charged. */
  unpaidRow: number | undefined;
  total: number;
}

/**
 * Accounts, the append-only ledger, the repeat-free billing cache and credit reservations.
 * Every method is synchronous so that callers can compose them inside one checkpoint transaction.
 */
export class BillingStore {
  private readonly stmts;
  /** Account ids never change their seq, so the mapping can be kept for the process's life. */
  private readonly seqs = new Map<string, number>();

  constructor(private readonly db: Db) {
    this.stmts = {
      insertAccount: db.prepare('INSERT INTO accounts (id, email, password_hash, credits, status, created_at) VALUES (?, ?, ?, 0, ?, ?)'),
      accountSeq: db.prepare('SELECT seq FROM accounts WHERE id = ?'),
      account: db.prepare('SELECT id, email, credits, status, rate_limit AS rateLimit, created_at AS createdAt FROM accounts WHERE id = ?'),
      accounts: db.prepare('SELECT id, email, credits, status, rate_limit AS rateLimit, created_at AS createdAt FROM accounts ORDER BY created_at'),
      byEmail: db.prepare('SELECT id, password_hash AS passwordHash, status FROM accounts WHERE email = ? COLLATE NOCASE'),
      setStatus: db.prepare('UPDATE accounts SET status = ? WHERE id = ?'),
      setRateLimit: db.prepare('UPDATE accounts SET rate_limit = ? WHERE id = ?'),
      addCredits: db.prepare('UPDATE accounts SET credits = credits + ? WHERE id = ?'),
      spend: db.prepare('UPDATE accounts SET credits = credits - ? WHERE id = ? AND credits >= ?'),
      insertLedger: db.prepare(
        'INSERT OR IGNORE INTO ledger (id, account_id, delta, reason, kind, job_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)',
      ),
      ledgerForAccount: db.prepare(
        'SELECT id, account_id AS accountId, delta, reason, kind, job_id AS jobId, created_at AS createdAt FROM ledger WHERE account_id = ? ORDER BY created_at, id',
      ),
      chargesForJob: db.prepare("SELECT COALESCE(-SUM(delta), 0) AS n FROM ledger WHERE job_id = ? AND reason = 'charge'"),
      // One primary-key probe per key given, in their order: a CROSS JOIN keeps SQLite from first
      // sorting the keys into a temporary index, as `lookup_key IN (SELECT ...)` makes it do.
      freshBilled: db.prepare(
        'SELECT b.lookup_key AS key FROM json_each(?) j CROSS JOIN billing_cache b ON b.account_seq = ? AND b.kind = ? AND b.lookup_key = j.value WHERE b.charged_at > ?',
      ),
      chargedKeys: db.prepare(
        'SELECT b.lookup_key AS key FROM billing_cache b JOIN ledger l ON l.seq = b.ledger_seq WHERE b.account_seq = ? AND l.job_id = ? ORDER BY b.lookup_key',
      ),
      upsertBilling: db.prepare(
        'INSERT INTO billing_cache (account_seq, kind, lookup_key, charged_at, ledger_seq) VALUES (?, ?, ?, ?, ?) ON CONFLICT (account_seq, kind, lookup_key) DO UPDATE SET charged_at = excluded.charged_at, ledger_seq = excluded.ledger_seq',
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
      if (this.account(id)) throw new AppError(ERROR_CODES.accountExists, `an account with id ${id} exists already`, { statusCode: 409 });
      if (input.email && this.credentials(input.email)) {
        throw new AppError(ERROR_CODES.accountExists, `an account with email ${input.email} exists already`, { statusCode: 409 });
      }
      this.stmts.insertAccount.run(id, input.email ?? null, input.passwordHash ?? null, 'active', input.now);
      if (input.credits > 0) this.addCredits(id, input.credits, 'grant', input.now);
    }).immediate();
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

  /** For login: the account with this email (any case) and its password hash. */
  credentials(email: string): { id: string; passwordHash: string | null; status: string } | undefined {
    return this.stmts.byEmail.get(email) as { id: string; passwordHash: string | null; status: string } | undefined;
  }

  setStatus(accountId: string, status: Account['status']): Account {
    this.requireAccount(accountId);
    this.stmts.setStatus.run(status, accountId);
    return this.requireAccount(accountId);
  }

  setRateLimit(accountId: string, perMinute: number | null): Account {
    this.requireAccount(accountId);
    this.stmts.setRateLimit.run(perMinute, accountId);
    return this.requireAccount(accountId);
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
      this.stmts.insertLedger.run(creditLedgerId(), accountId, amount, reason, null, null, now);
      this.stmts.addCredits.run(amount, accountId);
    }).immediate();
    return this.requireAccount(accountId);
  }

  ledger(accountId: string): LedgerEntry[] {
    return this.stmts.ledgerForAccount.all(accountId) as LedgerEntry[];
  }

  /** Credits charged by a job, from its ledger lines. */
  chargeCountForJob(jobId: string): number {
    return (this.stmts.chargesForJob.get(jobId) as { n: number }).n;
  }

  /** The keys a job paid for (those whose last charge was the job's), sorted. */
  chargedKeys(accountId: string, jobId: string): string[] {
    return (this.stmts.chargedKeys.all(this.seq(accountId), jobId) as { key: string }[]).map((r) => r.key);
  }

  /** Keys this account paid for after `since`: their repeats are free. One query per batch. */
  freshlyBilled(accountId: string, kind: string, keys: readonly string[], since: number): Set<string> {
    if (keys.length === 0) return new Set();
    const rows = this.stmts.freshBilled.all(JSON.stringify(keys), this.seq(accountId), kind, since) as { key: string }[];
    return new Set(rows.map((r) => r.key));
  }

  /**
   * Settles one batch of keys of one kind: `chargeRows` with every key its own row, for callers
   * with a single lookup.
   */
  chargeBatch(input: { accountId: string; kind: string; keys: readonly string[]; jobId: string; batchId: string; now: number; since: number }): BatchCharge {
    const { keys, kind, ...rest } = input;
    const charge = this.chargeRows({ ...rest, kinds: [kind], items: keys.map((key, i) => ({ kind: 0, key, row: i })) });
    return { charged: charge.charged[0]!, unpaidFrom: charge.unpaidRow };
  }

  /**
   * Settles one checkpoint batch: each (kind, key) the account has not paid for since `since` costs
   * one credit, in the order given, until the balance runs out. A row is paid for whole or not at
   * all: when the balance runs out inside a row, none of that row's items is charged, and
   * `unpaidRow` says where the paid rows end. One ledger line per kind (its id derived from the
   * batch, and the kind after the first) and one balance update cover the batch; billing_cache
   * records each key. Must run inside the checkpoint transaction, so the charges commit with the
   * rows they pay for.
   */
  chargeRows(input: {
    accountId: string;
    /** The lookup kinds, indexed by `items[].kind`. */
    kinds: readonly string[];
    /** In row order. */
    items: ReadonlyArray<{ kind: number; key: string; row: number }>;
    jobId: string;
    batchId: string;
    now: number;
    since: number;
    /**
     * Per kind, keys the caller found billed after `since` before the transaction began (from
     * `freshlyBilled`). They are billed still, since billing-cache rows are never removed and their
     * `charged_at` only moves forward, so only the other keys are looked up again here.
     */
    billed?: readonly ReadonlySet<string>[];
  }): RowsCharge {
    const { accountId, kinds, items, now, billed } = input;
    const fresh = kinds.map((kind, k) => {
      const known = billed?.[k];
      const unknown = items.flatMap((item) => (item.kind === k && known?.has(item.key) !== true ? [item.key] : []));
      const found = this.freshlyBilled(accountId, kind, unknown, input.since);
      return known === undefined ? found : { has: (key: string) => known.has(key) || found.has(key) };
    });
    const balance = this.requireAccount(accountId).credits;
    const charged = kinds.map(() => new Set<string>());
    const order: { kind: number; key: string; row: number }[] = [];
    let unpaidRow: number | undefined;
    for (const item of items) {
      if (fresh[item.kind]!.has(item.key) || charged[item.kind]!.has(item.key)) continue;
      if (order.length === balance) {
        unpaidRow = item.row;
        // Whatever this row had already been granted goes back: its rows are not committed.
        while (order.length > 0 && order[order.length - 1]!.row === item.row) {
          const undone = order.pop()!;
          charged[undone.kind]!.delete(undone.key);
        }
        break;
      }
      charged[item.kind]!.add(item.key);
      order.push(item);
    }
    if (order.length === 0) return { charged, unpaidRow, total: 0 };
    if (this.stmts.spend.run(order.length, accountId, order.length).changes === 0) {
      throw new AppError(ERROR_CODES.internal, `balance of ${accountId} changed inside a transaction`);
    }
    const seq = this.seq(accountId);
    kinds.forEach((kind, k) => {
      const keys = charged[k]!;
      if (keys.size === 0) return;
      const ledgerId = chargeLedgerId(accountId, input.jobId, k === 0 ? input.batchId : `${input.batchId}:${kind}`);
      const line = this.stmts.insertLedger.run(ledgerId, accountId, -keys.size, 'charge', kind, input.jobId, now);
      if (line.changes === 0) {
        throw new AppError(ERROR_CODES.internal, `batch ${input.batchId} of ${input.jobId} was already charged for ${kind}`);
      }
      // The line's `seq` (its INTEGER PRIMARY KEY), not its id: billing rows stay small (migration 009).
      const ledgerSeq = Number(line.lastInsertRowid);
      for (const key of keys) this.stmts.upsertBilling.run(seq, kind, key, now, ledgerSeq);
    });
    return { charged, unpaidRow, total: order.length };
  }

  /**
   * A flat charge for one call, outside the repeat-free window: the agent endpoints' "1 credit
   * always" (`amount` 1, the default), or a price the call sets, such as 1 per result returned.
   * All or nothing: false (nothing written) when the balance cannot cover `amount`. Must run
   * inside the caller's transaction.
   */
  chargeCall(input: { accountId: string; kind: string; callId: string; now: number; amount?: number }): boolean {
    const amount = input.amount ?? 1;
    if (!Number.isSafeInteger(amount) || amount < 1) throw new AppError(ERROR_CODES.internal, `a call costs a positive whole number of credits, not ${amount}`);
    if (this.stmts.spend.run(amount, input.accountId, amount).changes === 0) return false;
    this.stmts.insertLedger.run(chargeLedgerId(input.accountId, 'call', input.callId), input.accountId, -amount, 'charge', input.kind, null, input.now);
    return true;
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

  private seq(accountId: string): number {
    let seq = this.seqs.get(accountId);
    if (seq === undefined) {
      const row = this.stmts.accountSeq.get(accountId) as { seq: number } | undefined;
      if (!row) throw new AppError(ERROR_CODES.accountNotFound, `no account ${accountId}`, { statusCode: 404 });
      seq = row.seq;
      this.seqs.set(accountId, seq);
    }
    return seq;
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
