import type { SessionsPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

/** Login sessions by token hash. */
export class PgSessions implements SessionsPort {
  constructor(private readonly db: PgDatabase) {}

  async create(tokenHash: string, accountId: string, expiresAt: number, now: number): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      await tx.query('DELETE FROM sessions WHERE expires_at < $1', [now]);
      // FOR SHARE waits for a suspension in flight (its UPDATE holds the row) and then reads its
      // status; a suspension that comes after waits for this insert and then deletes it.
      const { rows } = await tx.query<{ status: string }>('SELECT status FROM accounts WHERE id = $1 FOR SHARE', [accountId]);
      if (rows[0]?.status !== 'active') return false;
      await tx.query('INSERT INTO sessions (token_hash, account_id, expires_at, created_at) VALUES ($1, $2, $3, $4)', [tokenHash, accountId, expiresAt, now]);
      return true;
    });
  }

  async get(tokenHash: string): Promise<{ accountId: string; expiresAt: number } | undefined> {
    const { rows } = await this.db.query<{ accountId: string; expiresAt: number }>(
      'SELECT account_id AS "accountId", expires_at AS "expiresAt" FROM sessions WHERE token_hash = $1',
      [tokenHash],
    );
    return rows[0];
  }

  async live(tokenHash: string, now: number): Promise<string | undefined> {
    const { rows } = await this.db.query<{ accountId: string }>(
      `SELECT s.account_id AS "accountId" FROM sessions s JOIN accounts a ON a.id = s.account_id
        WHERE s.token_hash = $1 AND s.expires_at > $2 AND a.status = 'active'`,
      [tokenHash, now],
    );
    return rows[0]?.accountId;
  }

  async end(tokenHash: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ accountId: string }>('DELETE FROM sessions WHERE token_hash = $1 RETURNING account_id AS "accountId"', [tokenHash]);
    return rows[0]?.accountId;
  }
}
