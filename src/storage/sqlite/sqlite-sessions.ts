import type { SessionsPort } from '../store.js';
import type { Db } from './open-database.js';

/** Login sessions by token hash. */
export class SqliteSessions implements SessionsPort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      // Only for an active account, read in the same IMMEDIATE transaction that writes: a
      // suspension (which deletes the account's sessions) runs wholly before or after it.
      insert: db.prepare(
        "INSERT INTO sessions (token_hash, account_id, expires_at, created_at) SELECT ?, id, ?, ? FROM accounts WHERE id = ? AND status = 'active'",
      ),
      get: db.prepare('SELECT account_id AS accountId, expires_at AS expiresAt FROM sessions WHERE token_hash = ?'),
      live: db.prepare(
        "SELECT s.account_id AS accountId FROM sessions s JOIN accounts a ON a.id = s.account_id WHERE s.token_hash = ? AND s.expires_at > ? AND a.status = 'active'",
      ),
      end: db.prepare('DELETE FROM sessions WHERE token_hash = ? RETURNING account_id AS accountId'),
      purge: db.prepare('DELETE FROM sessions WHERE expires_at < ?'),
    };
  }

  async create(tokenHash: string, accountId: string, expiresAt: number, now: number): Promise<boolean> {
    return this.db
      .transaction(() => {
        this.s.purge.run(now);
        return this.s.insert.run(tokenHash, expiresAt, now, accountId).changes === 1;
      })
      .immediate();
  }

  async get(tokenHash: string): Promise<{ accountId: string; expiresAt: number } | undefined> {
    return this.s.get.get(tokenHash) as { accountId: string; expiresAt: number } | undefined;
  }

  async live(tokenHash: string, now: number): Promise<string | undefined> {
    return (this.s.live.get(tokenHash, now) as { accountId: string } | undefined)?.accountId;
  }

  async end(tokenHash: string): Promise<string | undefined> {
    return (this.s.end.get(tokenHash) as { accountId: string } | undefined)?.accountId;
  }
}
