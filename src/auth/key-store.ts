import { randomUUID } from 'node:crypto';
import type { Db } from '../storage/sqlite/open-database.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { randomToken, sameHash, seal, sha256, unseal } from './secrets.js';

export const ROLES = { admin: 'admin', tech: 'tech', readonly: 'readonly' } as const;
export type Role = (typeof ROLES)[keyof typeof ROLES];

/** Every key starts with this, so leaked keys are easy to find in logs and code scans. */
export const KEY_PREFIX = 'sluice_';
const SECRET_LENGTH = 32;
const PREFIX_LENGTH = KEY_PREFIX.length + 6;

export interface ApiKey {
  id: string;
  accountId: string;
  name: string;
  keyPrefix: string;
  role: Role;
  isActive: boolean;
  revokedAt: number | null;
  createdAt: number;
}

export type KeyCheck =
  | { ok: true; key: ApiKey; accountStatus: string }
  | { ok: false; reason: 'missing' | 'unknown' | 'disabled' | 'revoked' | 'suspended' };

type KeyRow = Omit<ApiKey, 'isActive'> & { isActive: number; keyHash: string; sealed: string | null; revealUntil: number | null };

const COLUMNS = `id, account_id AS accountId, name, key_prefix AS keyPrefix, role, is_active AS isActive, revoked_at AS revokedAt,
  created_at AS createdAt, key_hash AS keyHash, sealed, reveal_until AS revealUntil`;

/**
 * API keys: created with a secret shown once (and revealable for a short window), stored as a
 * hash, checked on every request against the key's and the account's state, so a disabled key or
 * a suspended account is refused on its very next request.
 */
export class KeyStore {
  private readonly s;

  constructor(
    db: Db,
    private readonly sealKey: Buffer,
    private readonly revealWindowMs: number,
  ) {
    this.s = {
      insert: db.prepare(
        `INSERT INTO api_keys (id, account_id, name, key_hash, key_prefix, role, sealed, reveal_until, created_at)
         VALUES (@id, @accountId, @name, @keyHash, @keyPrefix, @role, @sealed, @revealUntil, @now)`,
      ),
      byHash: db.prepare(`SELECT ${COLUMNS}, (SELECT status FROM accounts a WHERE a.id = k.account_id) AS accountStatus FROM api_keys k WHERE key_hash = ?`),
      byId: db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE id = ?`),
      list: db.prepare(`SELECT ${COLUMNS} FROM api_keys WHERE account_id = ? ORDER BY created_at, id`),
      setActive: db.prepare('UPDATE api_keys SET is_active = ? WHERE id = ? AND revoked_at IS NULL'),
      revoke: db.prepare('UPDATE api_keys SET is_active = 0, revoked_at = ?, sealed = NULL WHERE id = ?'),
      forget: db.prepare('UPDATE api_keys SET sealed = NULL WHERE id = ?'),
      touch: db.prepare('UPDATE api_keys SET last_used_at = ? WHERE id = ?'),
    };
  }

  create(input: { accountId: string; name: string; role: Role; now: number }): { key: ApiKey; secret: string } {
    const secret = `${KEY_PREFIX}${randomToken(SECRET_LENGTH)}`;
    const id = randomUUID();
    this.s.insert.run({
      id,
      accountId: input.accountId,
      name: input.name,
      keyHash: sha256(secret),
      keyPrefix: secret.slice(0, PREFIX_LENGTH),
      role: input.role,
      sealed: seal(secret, this.sealKey),
      revealUntil: input.now + this.revealWindowMs,
      now: input.now,
    });
    return { key: this.get(id)!, secret };
  }

  get(id: string): ApiKey | undefined {
    const row = this.s.byId.get(id) as KeyRow | undefined;
    return row && toKey(row);
  }

  list(accountId: string): ApiKey[] {
    return (this.s.list.all(accountId) as KeyRow[]).map(toKey);
  }

  check(secret: string | undefined): KeyCheck {
    if (!secret) return { ok: false, reason: 'missing' };
    if (!secret.startsWith(KEY_PREFIX)) return { ok: false, reason: 'unknown' };
    const hash = sha256(secret);
    const row = this.s.byHash.get(hash) as (KeyRow & { accountStatus: string | null }) | undefined;
    if (!row || !sameHash(row.keyHash, hash)) return { ok: false, reason: 'unknown' };
    if (row.revokedAt !== null) return { ok: false, reason: 'revoked' };
    if (!row.isActive) return { ok: false, reason: 'disabled' };
    if (row.accountStatus !== 'active') return { ok: false, reason: 'suspended' };
    return { ok: true, key: toKey(row), accountStatus: row.accountStatus };
  }

  setActive(id: string, active: boolean): boolean {
    return this.s.setActive.run(active ? 1 : 0, id).changes === 1;
  }

  revoke(id: string, now: number): boolean {
    return this.s.revoke.run(now, id).changes === 1;
  }

  /**
   * The full secret while the reveal window is open; after it (or once revoked) the sealed copy is
   * dropped and the key `can no longer be shown` (410).
   */
  reveal(id: string, now: number): string {
    const row = this.s.byId.get(id) as KeyRow | undefined;
    if (!row) throw new AppError(ERROR_CODES.keyNotFound, 'API key not found', { statusCode: 404 });
    if (row.sealed === null || row.revealUntil === null || row.revealUntil < now || row.revokedAt !== null) {
      if (row.sealed !== null) this.s.forget.run(id);
      throw new AppError(ERROR_CODES.keyGone, 'API key can no longer be shown', { statusCode: 410 });
    }
    return unseal(row.sealed, this.sealKey);
  }
}

function toKey(row: KeyRow): ApiKey {
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    keyPrefix: row.keyPrefix,
    role: row.role,
    isActive: row.isActive === 1,
    revokedAt: row.revokedAt,
    createdAt: row.createdAt,
  };
}
