import type { Db } from '../storage/sqlite/open-database.js';
import { randomToken, sha256 } from './secrets.js';

/** Login sessions: a bearer token good only for creating API keys, stored as a hash, expiring. */
export class SessionStore {
  private readonly s;

  constructor(db: Db, private readonly ttlMs: number) {
    this.s = {
      insert: db.prepare('INSERT INTO sessions (token_hash, account_id, expires_at, created_at) VALUES (?, ?, ?, ?)'),
      get: db.prepare('SELECT account_id AS accountId, expires_at AS expiresAt FROM sessions WHERE token_hash = ?'),
      purge: db.prepare('DELETE FROM sessions WHERE expires_at < ?'),
    };
  }

  create(accountId: string, now: number): { token: string; expiresAt: number } {
    this.s.purge.run(now);
    const token = `sess_${randomToken(40)}`;
    const expiresAt = now + this.ttlMs;
    this.s.insert.run(sha256(token), accountId, expiresAt, now);
    return { token, expiresAt };
  }

  /** The session's account, or undefined for an unknown or expired token. */
  accountFor(token: string | undefined, now: number): string | undefined {
    if (!token) return undefined;
    const row = this.s.get.get(sha256(token)) as { accountId: string; expiresAt: number } | undefined;
    return row && row.expiresAt > now ? row.accountId : undefined;
  }
}
