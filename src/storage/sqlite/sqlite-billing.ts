import { randomUUID } from 'node:crypto';
import type { BillingHash, BillingKeys } from '../billing-key.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { chargeLedgerId, creditLedgerId } from '../ledger-ids.js';
import { JOB_STATUSES } from '../job-states.js';
import type { Account, LedgerEntry } from '../records.js';
import type { BillingPort, LookupCommit } from '../store.js';
import type { Db } from './open-database.js';
import type { SqliteOutbox } from './sqlite-outbox.js';
import type { SqliteResults } from './sqlite-results.js';
import { SqliteBillingIndex } from './sqlite-billing-index.js';

/** What one batch's charges came to, inside the transaction that commits them. */
export type KeysCharge = { ok: true } | { ok: false; billed: Set<string>[]; balance: number };

/**
 * Accounts, the append-only ledger, the repeat-free billing cache and credit reservations. The
 * `*Sync` methods run inside another operation's transaction (a checkpoint, a state change), so
 * that its charges and reservations commit with it; SQLite's single writer serialises them.
 */
export class SqliteBilling implements BillingPort {
  private readonly stmts;
  /** Account ids never change their seq, so the mapping can be kept for the process's life. */
  private readonly seqs = new Map<string, number>();
  private readonly index: SqliteBillingIndex;

  constructor(
    private readonly db: Db,
    private readonly results: SqliteResults,
    private readonly outbox: SqliteOutbox,
    /** The one place keys become billing-cache names: every statement below binds a BillingHash. */
    private readonly names: BillingKeys,
  ) {
    this.index = new SqliteBillingIndex(db);
    this.stmts = {
      insertAccount: db.prepare('INSERT INTO accounts (id, email, password_hash, credits, status, created_at) VALUES (?, ?, ?, 0, ?, ?)'),
      accountSeq: db.prepare('SELECT seq FROM accounts WHERE id = ?'),
      account: db.prepare('SELECT id, email, credits, status, rate_limit AS rateLimit, created_at AS createdAt FROM accounts WHERE id = ?'),
      accounts: db.prepare('SELECT id, email, credits, status, rate_limit AS rateLimit, created_at AS createdAt FROM accounts ORDER BY created_at'),
      byEmail: db.prepare('SELECT id, password_hash AS passwordHash, status FROM accounts WHERE email = ? COLLATE NOCASE'),
      setStatus: db.prepare('UPDATE accounts SET status = ? WHERE id = ?'),
      endSessions: db.prepare('DELETE FROM sessions WHERE account_id = ?'),
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
      chargedKeys: db.prepare(
        'SELECT lower(hex(b.key_hash)) AS name FROM billing_cache b JOIN ledger l ON l.seq = b.ledger_seq WHERE b.account_seq = ? AND l.job_id = ? ORDER BY b.key_hash',
      ),
      reservedByOthers: db.prepare(
        'SELECT COALESCE(SUM(amount), 0) AS n FROM credit_reservations WHERE account_id = ? AND NOT (job_id = ? AND chunk_index = ?)',
      ),
      reservedTotal: db.prepare('SELECT COALESCE(SUM(amount), 0) AS n FROM credit_reservations WHERE account_id = ?'),
      balance: db.prepare(
        'SELECT a.credits, (SELECT COALESCE(SUM(r.amount), 0) FROM credit_reservations r WHERE r.account_id = a.id) AS reserved FROM accounts a WHERE a.id = ?',
      ),
      // Only chunks in work: a reservation left by a batch that failed before its checkpoint is
      // replaced when its chunk is taken again, and holds nothing until then.
      reservedInWork: db.prepare(
        `SELECT COALESCE(SUM(r.amount), 0) AS n FROM credit_reservations r
           JOIN job_chunks c ON c.job_id = r.job_id AND c.chunk_index = r.chunk_index
          WHERE r.account_id = ? AND c.lease_owner IS NOT NULL AND c.lease_expires_at >= ?`,
      ),
      upsertReservation: db.prepare(
        'INSERT INTO credit_reservations (job_id, chunk_index, account_id, amount) VALUES (?, ?, ?, ?) ON CONFLICT (job_id, chunk_index) DO UPDATE SET amount = excluded.amount',
      ),
      jobStatus: db.prepare<[string], { status: string }>('SELECT status FROM jobs WHERE id = ?'),
      deleteReservation: db.prepare('DELETE FROM credit_reservations WHERE job_id = ? AND chunk_index = ?'),
      deleteJobReservations: db.prepare('DELETE FROM credit_reservations WHERE job_id = ?'),
      // What `jobs.resume` does to a job (failure counts cleared, status running), for every job of
      // the account that paused for want of credits.
      freshChunksOfCreditPaused: db.prepare(
        "UPDATE job_chunks SET failures = 0 WHERE job_id IN (SELECT id FROM jobs WHERE account_id = ? AND status = 'paused' AND reason = 'insufficient_credits')",
      ),
      resumeCreditPaused: db.prepare(
        `UPDATE jobs SET status = 'running', reason = NULL, error_message = NULL, failures = 0, updated_at = ?, finished_at = NULL
          WHERE account_id = ? AND status = 'paused' AND reason = 'insufficient_credits'`,
      ),
    };
  }

  async createAccount(input: { id?: string; email?: string | null; passwordHash?: string | null; credits: number; now: number }): Promise<Account> {
    const id = input.id ?? `acc_${randomUUID()}`;
    this.db.transaction(() => {
      if (this.accountSync(id)) throw new AppError(ERROR_CODES.accountExists, `an account with id ${id} exists already`, { statusCode: 409 });
      if (input.email && this.stmts.byEmail.get(input.email)) {
        throw new AppError(ERROR_CODES.accountExists, `an account with email ${input.email} exists already`, { statusCode: 409 });
      }
      this.stmts.insertAccount.run(id, input.email ?? null, input.passwordHash ?? null, 'active', input.now);
      if (input.credits > 0) this.addCreditsSync(id, input.credits, 'grant', input.now);
    }).immediate();
    return this.requireSync(id);
  }

  async account(id: string): Promise<Account | undefined> {
    return this.accountSync(id);
  }

  async requireAccount(id: string): Promise<Account> {
    return this.requireSync(id);
  }

  async credentials(email: string): Promise<{ id: string; passwordHash: string | null; status: string } | undefined> {
    return this.stmts.byEmail.get(email) as { id: string; passwordHash: string | null; status: string } | undefined;
  }

  async setStatus(accountId: string, status: Account['status']): Promise<Account> {
    this.db
      .transaction(() => {
        this.requireSync(accountId);
        this.stmts.setStatus.run(status, accountId);
        // A session from before a suspension must not come back to life with a reinstatement.
        if (status === 'suspended') this.stmts.endSessions.run(accountId);
      })
      .immediate();
    return this.requireSync(accountId);
  }

  async setRateLimit(accountId: string, perMinute: number | null): Promise<Account> {
    this.requireSync(accountId);
    this.stmts.setRateLimit.run(perMinute, accountId);
    return this.requireSync(accountId);
  }

  async accounts(): Promise<Account[]> {
    return this.stmts.accounts.all() as Account[];
  }

  /**
   * Also resumes the account's jobs paused with insufficient_credits, in the same transaction, however
   * small the amount: a job still short pauses again at its next batch (once per batch at most).
   */
  async addCredits(accountId: string, amount: number, reason: 'grant' | 'topup', now: number): Promise<Account> {
    this.db
      .transaction(() => {
        this.addCreditsSync(accountId, amount, reason, now);
        this.stmts.freshChunksOfCreditPaused.run(accountId);
        this.stmts.resumeCreditPaused.run(now, accountId);
      })
      .immediate();
    return this.requireSync(accountId);
  }

  async ledger(accountId: string): Promise<LedgerEntry[]> {
    return this.stmts.ledgerForAccount.all(accountId) as LedgerEntry[];
  }

  async chargeCountForJob(jobId: string): Promise<number> {
    return (this.stmts.chargesForJob.get(jobId) as { n: number }).n;
  }

  /** Merges the billing log first, so that the answer is one table's (a write, but a rare call). */
  async chargedKeys(accountId: string, jobId: string): Promise<string[]> {
    const seq = this.seq(accountId);
    return this.db
      .transaction(() => {
        this.index.mergeAll();
        return (this.stmts.chargedKeys.all(seq, jobId) as { name: string }[]).map((r) => r.name);
      })
      .immediate();
  }

  keyName(kind: string, key: string): string {
    return this.names.name(kind, key);
  }

  async freshlyBilled(accountId: string, kind: string, keys: readonly string[], since: number): Promise<Set<string>> {
    return this.billedAmongSync(accountId, kind, keys, await this.names.hashMany(kind, keys), since);
  }

  async reserve(accountId: string, jobId: string, chunkIndex: number, wanted: number): Promise<number> {
    return this.db
      .transaction(() => {
        if (this.stmts.jobStatus.get(jobId)?.status !== JOB_STATUSES.running) {
          this.stmts.deleteReservation.run(jobId, chunkIndex);
          return 0;
        }
        const account = this.requireSync(accountId);
        const others = (this.stmts.reservedByOthers.get(accountId, jobId, chunkIndex) as { n: number }).n;
        const granted = Math.max(0, Math.min(wanted, account.credits - others));
        this.stmts.upsertReservation.run(jobId, chunkIndex, accountId, granted);
        return granted;
      })
      .immediate();
  }

  async available(accountId: string): Promise<number> {
    return this.requireSync(accountId).credits - this.reservedSync(accountId);
  }

  async balance(accountId: string): Promise<{ credits: number; reserved: number }> {
    const row = this.stmts.balance.get(accountId) as { credits: number; reserved: number } | undefined;
    if (!row) throw new AppError(ERROR_CODES.accountNotFound, `no account ${accountId}`, { statusCode: 404 });
    return row;
  }

  async commitLookup(input: LookupCommit): Promise<{ ok: true; credits: number } | { ok: false }> {
    const { accountId, kind, charge, now } = input;
    const committed = this.db
      .transaction((): { ok: true; credits: number } | { ok: false } => {
        let credits = 0;
        if (charge.type === 'repeat_free') {
          const keys = this.freshlyBilledSync(accountId, kind, [charge.key], charge.since).has(charge.key) ? [] : [charge.key];
          const paid = this.chargeKeysSync({ accountId, jobId: 'single', kinds: [kind], keys: [keys], batchId: charge.batchId, since: charge.since, now }, undefined);
          if (!paid.ok) return { ok: false };
          credits = keys.length;
        } else if (charge.amount > 0) {
          if (!Number.isSafeInteger(charge.amount)) throw new AppError(ERROR_CODES.internal, `a call costs a whole number of credits, not ${charge.amount}`);
          if (this.spendableSync(accountId, undefined) < charge.amount) return { ok: false };
          this.stmts.spend.run(charge.amount, accountId, charge.amount);
          // A call id seen before would debit with no ledger line of its own: refuse it, rolling back.
          if (this.stmts.insertLedger.run(chargeLedgerId(accountId, 'call', charge.callId), accountId, -charge.amount, 'charge', kind, null, now).changes === 0) {
            throw new AppError(ERROR_CODES.internal, `call ${charge.callId} of ${accountId} was already charged`);
          }
          credits = charge.amount;
        }
        for (const entry of input.cache) this.results.putSync(entry.kind, entry.key, entry.result, now);
        if (input.event) this.outbox.addIfSubscribed(input.event(credits), now);
        return { ok: true, credits };
      })
      .immediate();
    this.afterCommit();
    return committed;
  }

  /** After a transaction that called chargeKeysSync has committed, before anything else runs. */
  afterCommit(): void {
    this.index.afterCommit();
  }

  accountSync(id: string): Account | undefined {
    return this.stmts.account.get(id) as Account | undefined;
  }

  requireSync(id: string): Account {
    const account = this.accountSync(id);
    if (!account) throw new AppError(ERROR_CODES.accountNotFound, `no account ${id}`, { statusCode: 404 });
    return account;
  }

  /** Grants and top-ups: one ledger line and the balance change. Inside the caller's transaction. */
  private addCreditsSync(accountId: string, amount: number, reason: 'grant' | 'topup', now: number): void {
    if (!Number.isSafeInteger(amount) || amount <= 0) {
      throw new AppError(ERROR_CODES.badArgument, 'credits to add must be a positive whole number', { statusCode: 400 });
    }
    this.requireSync(accountId);
    this.stmts.insertLedger.run(creditLedgerId(), accountId, amount, reason, null, null, now);
    this.stmts.addCredits.run(amount, accountId);
  }

  freshlyBilledSync(accountId: string, kind: string, keys: readonly string[], since: number): Set<string> {
    return this.billedAmongSync(accountId, kind, keys, this.hashes(kind, keys), since);
  }

  /** Of `keys` (whose hashes are `hashes`, same order), those the account paid for after `since`. */
  private billedAmongSync(accountId: string, kind: string, keys: readonly string[], hashes: readonly BillingHash[], since: number): Set<string> {
    if (keys.length === 0) return new Set();
    return new Set([...this.index.billedAmong(this.seq(accountId), kind, hashes, since)].map((i) => keys[i]!));
  }

  private hashes(kind: string, keys: readonly string[]): BillingHash[] {
    return keys.map((key) => this.names.hash(kind, key));
  }

  /**
   * The balance less what running chunks have reserved, `own` chunk's reservation excepted (a
   * single lookup has none). A charge never spends credits another chunk holds: a batch of a job
   * that has just paused (and so lost its reservation) must not take what another job reserved.
   */
  private spendableSync(accountId: string, own: { jobId: string; chunkIndex: number } | undefined): number {
    const credits = this.requireSync(accountId).credits;
    const held = own === undefined ? this.stmts.reservedTotal.get(accountId) : this.stmts.reservedByOthers.get(accountId, own.jobId, own.chunkIndex);
    return credits - (held as { n: number }).n;
  }

  /**
   * Charges one credit per key, by kind, inside the caller's transaction: one debit, one ledger line
   * per kind (its id derived from the batch, and the kind after the first, so a replayed batch
   * collides on the ledger's unique id and the transaction fails), and a billing row per key. Every
   * kind is checked before any is recorded (see SqliteBillingIndex.record). Writes
   * nothing and says what is true now when a key was billed since `since` or the spendable balance
   * (see spendableSync) is short.
   */
  chargeKeysSync(input: {
    accountId: string;
    jobId: string;
    kinds: readonly string[];
    keys: readonly (readonly string[])[];
    batchId: string;
    since: number;
    now: number;
  }, own: { jobId: string; chunkIndex: number } | undefined): KeysCharge {
    const { accountId, kinds, keys, now } = input;
    const total = keys.reduce((n, k) => n + k.length, 0);
    if (total === 0) return { ok: true };
    // Hashed once per key: the same names serve the repeat check and the rows written.
    const hashes = kinds.map((kind, k) => this.hashes(kind, keys[k] ?? []));
    const billed = kinds.map((kind, k) => this.billedAmongSync(accountId, kind, keys[k] ?? [], hashes[k]!, input.since));
    const balance = this.spendableSync(accountId, own);
    if (balance < total || billed.some((b) => b.size > 0)) return { ok: false, billed, balance };
    this.stmts.spend.run(total, accountId, total);
    const seq = this.seq(accountId);
    kinds.forEach((kind, k) => {
      const charged = keys[k] ?? [];
      if (charged.length === 0) return;
      const ledgerId = chargeLedgerId(accountId, input.jobId, k === 0 ? input.batchId : `${input.batchId}:${kind}`);
      const line = this.stmts.insertLedger.run(ledgerId, accountId, -charged.length, 'charge', kind, input.jobId, now);
      if (line.changes === 0) {
        throw new AppError(ERROR_CODES.internal, `batch ${input.batchId} of ${input.jobId} was already charged for ${kind}`);
      }
      // The line's `seq` (its INTEGER PRIMARY KEY), not its id: billing rows stay small (migration 009).
      const ledgerSeq = Number(line.lastInsertRowid);
      this.index.record(seq, kind, hashes[k]!, now, ledgerSeq);
    });
    return { ok: true };
  }

  /**
   * Records in the billing cache that the account paid for `key` with ledger line `ledgerSeq`,
   * inside the caller's write transaction, after `freshlyBilledSync` checked it there (see
   * SqliteBillingIndex.record); the caller calls `afterCommit` once it has committed. For a charge
   * whose ledger line the caller wrote itself (a workflow step's, with its own id).
   */
  recordChargeSync(accountId: string, kind: string, key: string, ledgerSeq: number, now: number): void {
    this.index.record(this.seq(accountId), kind, this.hashes(kind, [key]), now, ledgerSeq);
  }

  /** The balance less every reservation of the account: what a chunk with none could reserve now. */
  spendableAfterReleaseSync(accountId: string): number {
    return this.spendableSync(accountId, undefined);
  }

  /** Credits the account's chunks hold. */
  reservedSync(accountId: string): number {
    return (this.stmts.reservedTotal.get(accountId) as { n: number }).n;
  }

  /** Credits held by the account's chunks that a worker has in work now. */
  reservedInWorkSync(accountId: string, now: number): number {
    return (this.stmts.reservedInWork.get(accountId, now) as { n: number }).n;
  }

  releaseReservationSync(jobId: string, chunkIndex: number): void {
    this.stmts.deleteReservation.run(jobId, chunkIndex);
  }

  releaseJobReservationsSync(jobId: string): void {
    this.stmts.deleteJobReservations.run(jobId);
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
}
