import type { ApiKeyRow, NewApiKeyRow } from '../records.js';
import type { KeysPort } from '../store.js';
import type { Db } from './open-database.js';
import { SqliteOutbox } from './sqlite-outbox.js';

type Row = Omit<ApiKeyRow, 'isActive'> & { isActive: number };

const COLUMNS = `id, account_id AS accountId, name, key_prefix AS keyPrefix, role, is_active AS isActive, revoked_at AS revokedAt,
  created_at AS createdAt, key_hash AS keyHash, sealed, reveal_until AS revealUntil, expires_at AS expiresAt, replaced_by AS replacedBy`;

/** API key rows. Each method is one statement, atomic on its own. */
export class SqliteKeys implements KeysPort {
  private readonly s;
  private readonly outbox: SqliteOutbox;

  constructor(private readonly db: Db) {
    this.outbox = new SqliteOutbox(db);
    this.s = {
      insert: db.prepare(
        `INSERT INTO api_keys (id, account_id, name, key_hash, key_prefix, role, sealed, reveal_until, created_at, expires_at)
         VALUES (@id, @accountId, @name, @keyHash, @keyPrefix, @role, @sealed, @revealUntil, @now, @expiresAt)`,
      ),
      endRolled: db.prepare(
        `UPDATE api_keys SET expires_at = min(coalesce(expires_at, @endsAt), @endsAt), replaced_by = @next
         WHERE id = @id AND revoked_at IS NULL AND replaced_by IS NULL AND (expires_at IS NULL OR expires_at > @now)`,
      ),
      revokeExpired: db.prepare('UPDATE api_keys SET is_active = 0, revoked_at = expires_at, sealed = NULL WHERE revoked_at IS NULL AND expires_at <= ?'),
      byHash: db.prepare(`SELECT ${COLUMNS}, (SELECT status FROM accounts a WHERE a.id = k.account_id) AS accountStatus FROM api_keys k WHERE key_hash = ?`),
      byId: db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`),
      list: db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY created_at, id`),
      setActive: db.prepare('UPDATE api_keys SET is_active = ? WHERE id = ? AND revoked_at IS NULL'),
      revoke: db.prepare('UPDATE api_keys SET is_active = 0, revoked_at = ?, sealed = NULL WHERE id = ?'),
      forget: db.prepare('UPDATE api_keys SET sealed = NULL WHERE id = ?'),
      forgetExpired: db.prepare('UPDATE api_keys SET sealed = NULL WHERE sealed IS NOT NULL AND (reveal_until IS NULL OR reveal_until < ?)'),
    };
  }

  async insert(row: NewApiKeyRow): Promise<void> {
    this.db.transaction(() => this.insertSync(row))();
  }

  private insertSync(row: NewApiKeyRow): void {
    const { id, accountId, name, keyHash, keyPrefix, role, sealed, revealUntil, now, event } = row;
    this.s.insert.run({ id, accountId, name, keyHash, keyPrefix, role, sealed, revealUntil, now, expiresAt: row.expiresAt ?? null });
    if (event) this.outbox.addIfSubscribed(event, now);
  }

  /** IMMEDIATE: two rolls of one key serialise, and the second finds it replaced. */
  async roll(oldId: string, oldEndsAt: number, next: NewApiKeyRow): Promise<boolean> {
    return this.db
      .transaction(() => {
        if (this.s.endRolled.run({ id: oldId, endsAt: oldEndsAt, next: next.id, now: next.now }).changes !== 1) return false;
        this.insertSync(next);
        return true;
      })
      .immediate();
  }

  async revokeExpired(now: number): Promise<number> {
    return this.s.revokeExpired.run(now).changes;
  }

  async byHash(keyHash: string): Promise<(ApiKeyRow & { accountStatus: string | null }) | undefined> {
    const row = this.s.byHash.get(keyHash) as (Row & { accountStatus: string | null }) | undefined;
    return row && { ...fromRow(row), accountStatus: row.accountStatus };
  }

  async byId(id: string): Promise<ApiKeyRow | undefined> {
    const row = this.s.byId.get(id) as Row | undefined;
    return row && fromRow(row);
  }

  async list(accountId: string): Promise<ApiKeyRow[]> {
    return (this.s.list.all(accountId) as Row[]).map(fromRow);
  }

  async setActive(id: string, active: boolean): Promise<boolean> {
    return this.s.setActive.run(active ? 1 : 0, id).changes === 1;
  }

  async revoke(id: string, now: number): Promise<boolean> {
    return this.s.revoke.run(now, id).changes === 1;
  }

  async forgetSealed(id: string): Promise<void> {
    this.s.forget.run(id);
  }

  async forgetExpiredSeals(now: number): Promise<number> {
    return this.s.forgetExpired.run(now).changes;
  }
}

function fromRow(row: Row): ApiKeyRow {
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    keyPrefix: row.keyPrefix,
    role: row.role,
    isActive: row.isActive === 1,
    revokedAt: row.revokedAt,
    createdAt: row.createdAt,
    keyHash: row.keyHash,
    sealed: row.sealed,
    revealUntil: row.revealUntil,
    expiresAt: row.expiresAt,
    replacedBy: row.replacedBy,
  };
}
