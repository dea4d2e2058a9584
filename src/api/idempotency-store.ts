import type { Db } from '../storage/sqlite/open-database.js';

export type Claim = { state: 'new' } | { state: 'in_flight' } | { state: 'done'; jobId: string; fingerprint: string };

/** A claim whose request died before finishing is taken over after this long. */
const STALE_MS = 15 * 60_000;
/** Keys are remembered for a day, as the usual idempotency-key convention has it. */
const KEEP_MS = 24 * 3600_000;

/**
 * Idempotency-Key bookkeeping for uploads: the first request claims the key, finishes with the
 * job it made and the request's fingerprint; a retry gets that job, a different request 422.
 */
export class IdempotencyStore {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      purge: db.prepare('DELETE FROM idempotency_keys WHERE created_at < ?'),
      insert: db.prepare("INSERT OR IGNORE INTO idempotency_keys (account_id, key, fingerprint, created_at) VALUES (?, ?, '', ?)"),
      get: db.prepare('SELECT fingerprint, job_id AS jobId, created_at AS createdAt FROM idempotency_keys WHERE account_id = ? AND key = ?'),
      retake: db.prepare('UPDATE idempotency_keys SET created_at = ? WHERE account_id = ? AND key = ? AND job_id IS NULL AND created_at = ?'),
      finish: db.prepare('UPDATE idempotency_keys SET fingerprint = ?, job_id = ? WHERE account_id = ? AND key = ?'),
      release: db.prepare('DELETE FROM idempotency_keys WHERE account_id = ? AND key = ? AND job_id IS NULL'),
    };
  }

  claim(accountId: string, key: string, now: number): Claim {
    return this.db
      .transaction((): Claim => {
        this.s.purge.run(now - KEEP_MS);
        if (this.s.insert.run(accountId, key, now).changes === 1) return { state: 'new' };
        const row = this.s.get.get(accountId, key) as { fingerprint: string; jobId: string | null; createdAt: number };
        if (row.jobId !== null) return { state: 'done', jobId: row.jobId, fingerprint: row.fingerprint };
        if (row.createdAt < now - STALE_MS && this.s.retake.run(now, accountId, key, row.createdAt).changes === 1) return { state: 'new' };
        return { state: 'in_flight' };
      })
      .immediate();
  }

  finish(accountId: string, key: string, fingerprint: string, jobId: string): void {
    this.s.finish.run(fingerprint, jobId, accountId, key);
  }

  /** The claimed request failed: let a retry start afresh. */
  release(accountId: string, key: string): void {
    this.s.release.run(accountId, key);
  }
}
