import type { SessionsPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

/** Login sessions by token hash. */
export class PgSessions implements SessionsPort {
  constructor(private readonly db: PgDatabase) {}

  async create(tokenHash: string, accountId: string, expiresAt: number, now: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.query('DELETE FROM sessions WHERE expires_at < $1', [now]);
      await tx.query('INSERT INTO sessions (token_hash, account_id, expires_at, created_at) VALUES ($1, $2, $3, $4)', [tokenHash, accountId, expiresAt, now]);
    });
  }

  async get(tokenHash: string): Promise<{ accountId: string; expiresAt: number } | undefined> {
    const { rows } = await this.db.query<{ accountId: string; expiresAt: number }>(
      'SELECT account_id AS "accountId", expires_at AS "expiresAt" FROM sessions WHERE token_hash = $1',
      [tokenHash],
    );
    return rows[0];
  }
}
