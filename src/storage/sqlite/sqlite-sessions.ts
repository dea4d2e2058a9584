import type { SessionsPort } from '../store.js';
import type { Db } from './open-database.js';

/** Login sessions by token hash. */
export class SqliteSessions implements SessionsPort {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare('INSERT INTO sessions (token_hash, account_id, expires_at, created_at) VALUES (?, ?, ?, ?)'),
      get: db.prepare('SELECT account_id AS accountId, expires_at AS expiresAt FROM sessions WHERE token_hash = ?'),
      purge: db.prepare('DELETE FROM sessions WHERE expires_at < ?'),
    };
  }

  async create(tokenHash: string, accountId: string, expiresAt: number, now: number): Promise<void> {
    this.s.purge.run(now);
    this.s.insert.run(tokenHash, accountId, expiresAt, now);
  }

  async get(tokenHash: string): Promise<{ accountId: string; expiresAt: number } | undefined> {
    return this.s.get.get(tokenHash) as { accountId: string; expiresAt: number } | undefined;
  }
}
