import type { IdempotencyClaim } from '../records.js';
import type { IdempotencyPort } from '../store.js';
import type { Db } from './open-database.js';

/** Idempotency keys of uploads, per account. */
export class SqliteIdempotency implements IdempotencyPort {
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

  /** IMMEDIATE: two requests with one key, from any process, must not both read "no claim yet". */
  async claim(accountId: string, key: string, now: number, staleMs: number, keepMs: number): Promise<IdempotencyClaim> {
    return this.db
      .transaction((): IdempotencyClaim => {
        this.s.purge.run(now - keepMs);
        if (this.s.insert.run(accountId, key, now).changes === 1) return { state: 'new' };
        const row = this.s.get.get(accountId, key) as { fingerprint: string; jobId: string | null; createdAt: number };
        if (row.jobId !== null) return { state: 'done', jobId: row.jobId, fingerprint: row.fingerprint };
        if (row.createdAt < now - staleMs && this.s.retake.run(now, accountId, key, row.createdAt).changes === 1) return { state: 'new' };
        return { state: 'in_flight' };
      })
      .immediate();
  }

  async finish(accountId: string, key: string, fingerprint: string, jobId: string): Promise<void> {
    this.s.finish.run(fingerprint, jobId, accountId, key);
  }

  async release(accountId: string, key: string): Promise<void> {
    this.s.release.run(accountId, key);
  }
}
