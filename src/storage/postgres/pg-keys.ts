import type { ApiKeyRow, NewApiKeyRow } from '../records.js';
import type { KeysPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';
import { addToOutbox, subscribed } from './pg-core-outbox.js';
import type { PgQueryable } from './pg-queryable.js';

const COLUMNS = `k.id, k.account_id AS "accountId", k.name, k.key_prefix AS "keyPrefix", k.role, k.is_active AS "isActive",
  k.revoked_at AS "revokedAt", k.created_at AS "createdAt", k.key_hash AS "keyHash", k.sealed, k.reveal_until AS "revealUntil",
  k.expires_at AS "expiresAt", k.replaced_by AS "replacedBy"`;

/** API key rows. Each method is one statement, atomic on its own. */
export class PgKeys implements KeysPort {
  constructor(private readonly db: PgDatabase) {}

  async insert(row: NewApiKeyRow): Promise<void> {
    await this.db.transaction((tx) => insertKey(tx, row));
  }

  /** The UPDATE takes the old key's row lock: a second roll of it waits, then finds it replaced. */
  async roll(oldId: string, oldEndsAt: number, next: NewApiKeyRow): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const { rowCount } = await tx.query(
        `UPDATE api_keys SET expires_at = LEAST(coalesce(expires_at, $2), $2), replaced_by = $3
         WHERE id = $1 AND revoked_at IS NULL AND replaced_by IS NULL AND (expires_at IS NULL OR expires_at > $4)`,
        [oldId, oldEndsAt, next.id, next.now],
      );
      if (rowCount !== 1) return false;
      await insertKey(tx, next);
      return true;
    });
  }

  async revokeExpired(now: number): Promise<number> {
    return (await this.db.query('UPDATE api_keys SET is_active = FALSE, revoked_at = expires_at, sealed = NULL WHERE revoked_at IS NULL AND expires_at <= $1', [now])).rowCount;
  }

  async byHash(keyHash: string): Promise<(ApiKeyRow & { accountStatus: string | null }) | undefined> {
    const { rows } = await this.db.query<ApiKeyRow & { accountStatus: string | null }>(
      `SELECT ${COLUMNS}, a.status AS "accountStatus" FROM api_keys k LEFT JOIN accounts a ON a.id = k.account_id WHERE k.key_hash = $1`,
      [keyHash],
    );
    return rows[0];
  }

  async byId(id: string): Promise<ApiKeyRow | undefined> {
    const { rows } = await this.db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys k WHERE k.id = $1`, [id]);
    return rows[0];
  }

  async list(accountId: string): Promise<ApiKeyRow[]> {
    const { rows } = await this.db.query<ApiKeyRow>(`SELECT ${COLUMNS} FROM api_keys k WHERE k.account_id = $1 ORDER BY k.created_at, k.id COLLATE "C"`, [accountId]);
    return rows;
  }

  async setActive(id: string, active: boolean): Promise<boolean> {
    return (await this.db.query('UPDATE api_keys SET is_active = $1 WHERE id = $2 AND revoked_at IS NULL', [active, id])).rowCount === 1;
  }

  async revoke(id: string, now: number): Promise<boolean> {
    return (await this.db.query('UPDATE api_keys SET is_active = FALSE, revoked_at = $1, sealed = NULL WHERE id = $2', [now, id])).rowCount === 1;
  }

  async forgetSealed(id: string): Promise<void> {
    await this.db.query('UPDATE api_keys SET sealed = NULL WHERE id = $1', [id]);
  }

  async forgetExpiredSeals(now: number): Promise<number> {
    return (await this.db.query('UPDATE api_keys SET sealed = NULL WHERE sealed IS NOT NULL AND (reveal_until IS NULL OR reveal_until < $1)', [now])).rowCount;
  }
}

async function insertKey(tx: PgQueryable, row: NewApiKeyRow): Promise<void> {
  await tx.query(
    `INSERT INTO api_keys (id, account_id, name, key_hash, key_prefix, role, sealed, reveal_until, created_at, expires_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
    [row.id, row.accountId, row.name, row.keyHash, row.keyPrefix, row.role, row.sealed, row.revealUntil, row.now, row.expiresAt ?? null],
  );
  const event = row.event;
  if (event && (await subscribed(tx, event.accountId, event.event))) await addToOutbox(tx, event, row.now);
}
