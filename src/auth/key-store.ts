import { randomUUID } from 'node:crypto';
import type { ApiKeyRow, NewApiKeyRow } from '../storage/records.js';
import type { KeysPort } from '../storage/store.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { KEY_PREFIX, KEY_SHAPES, keyShape, mintKey } from './key-format.js';
import { revealKeyName, type ShreddingSealer } from './data-keys.js';
import { apiKeyCreatedEvent } from './key-events.js';
import { sameHash, sha256 } from './secrets.js';

export { KEY_PREFIX } from './key-format.js';

export const ROLES = { admin: 'admin', tech: 'tech', readonly: 'readonly' } as const;
export type Role = (typeof ROLES)[keyof typeof ROLES];

const RANK: Record<Role, number> = { readonly: 0, tech: 1, admin: 2 };

/**
 * True when `target` stands above `actor`: a key may never act on such a key, or a leaked tech key
 * could disable the admin keys that would revoke it, or re-enable an admin key disabled after a leak.
 */
export function outranks(target: Role, actor: Role): boolean {
  return RANK[target] > RANK[actor];
}

/**
 * How often a long-running process (the API, a worker) drops sealed copies whose reveal window has
 * ended, whether or not anyone asked: the longest a copy outlives its window while one runs.
 */
export const SEAL_SWEEP_MS = 60_000;

/**
 * Sweeps now and every SEAL_SWEEP_MS until the returned function is called. A failed sweep is
 * reported and tried again at the next tick: a database blip must not stop a worker.
 */
export function sweepSealsPeriodically(keys: KeyStore, now: () => number, onError: (error: unknown) => void): () => void {
  const sweep = () => void keys.forgetExpiredSeals(now()).catch(onError);
  sweep();
  const timer = setInterval(sweep, SEAL_SWEEP_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** What a key list shows of each key: enough to tell keys apart, far too little to guess one. */
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
  /** When it stops working (chosen at creation, or the end of a roll's grace); null: never. */
  expiresAt: number | null;
  /** The key a roll made in its place. */
  replacedBy: string | null;
}

export type KeyCheck =
  | { ok: true; key: ApiKey; accountStatus: string }
  | { ok: false; reason: 'missing' | 'unknown' | 'disabled' | 'revoked' | 'expired' | 'suspended' };

export interface NewKey {
  accountId: string;
  name: string;
  role: Role;
  now: number;
  /** When the key stops working; unset: never. */
  expiresAt?: number | null;
}

/**
 * API keys: created with a secret shown once (and revealable for a short window), stored as a
 * hash, checked on every request against the key's and the account's state, so a disabled key or
 * a suspended account is refused on its very next request.
 */
export class KeyStore {
  constructor(
    private readonly keys: KeysPort,
    private readonly sealer: ShreddingSealer,
    private readonly revealWindowMs: number,
    /** The time a presented key's end is compared with. */
    private readonly now: () => number = Date.now,
  ) {}

  async create(input: NewKey): Promise<{ key: ApiKey; secret: string }> {
    const { row, secret } = await this.newRow(input);
    await this.keys.insert(row);
    // Creation is rare and a process that only ever creates keys (the CLI) sweeps nowhere else.
    await this.forgetExpiredSeals(input.now);
    return { key: (await this.get(row.id))!, secret };
  }

  /**
   * Issue 27, item 7: a new key with a new secret, the same name and role, in `old`'s place; `old`
   * keeps working until `graceMs` from now (or its own earlier end), then is refused. A key is
   * rolled once: rolling it again, or a revoked or ended key, is `invalid_state` (409), so a leaked
   * key cannot mint a key per roll without bound.
   */
  async roll(old: ApiKey, graceMs: number, now: number): Promise<{ key: ApiKey; secret: string }> {
    const { row, secret } = await this.newRow({ accountId: old.accountId, name: old.name, role: old.role, now, expiresAt: old.expiresAt });
    if (!(await this.keys.roll(old.id, now + graceMs, row))) {
      await this.forgetExpiredSeals(now);
      throw new AppError(ERROR_CODES.invalidState, 'API key cannot be rolled: it is revoked, past its end, or rolled already (roll its replacement)', { statusCode: 409 });
    }
    await this.forgetExpiredSeals(now);
    return { key: (await this.get(row.id))!, secret };
  }

  private async newRow(input: NewKey): Promise<{ row: NewApiKeyRow; secret: string }> {
    const secret = mintKey();
    const id = randomUUID();
    // With reveals switched off (a zero window) no sealed copy is written at all: it could only leak.
    const revealable = this.revealWindowMs > 0;
    const keyPrefix = secret.slice(0, PREFIX_LENGTH);
    const row: NewApiKeyRow = {
      id,
      accountId: input.accountId,
      name: input.name,
      keyHash: sha256(secret),
      keyPrefix,
      role: input.role,
      // Under the data key of the window's slot, destroyed when the slot ends (src/auth/data-keys.ts).
      sealed: revealable ? await this.sealer.seal(secret, revealKeyName(input.now, this.revealWindowMs)) : null,
      revealUntil: input.now + this.revealWindowMs,
      now: input.now,
      expiresAt: input.expiresAt ?? null,
      event: apiKeyCreatedEvent({ id, accountId: input.accountId, name: input.name, role: input.role, keyPrefix }, input.now),
    };
    return { row, secret };
  }

  /**
   * Drops every sealed copy past its reveal window and destroys the data keys of the windows that
   * have ended: the copies the database engine kept anyway (free pages, WAL, dead tuples) are noise.
   */
  async forgetExpiredSeals(now: number): Promise<number> {
    const dropped = await this.keys.forgetExpiredSeals(now);
    await this.sealer.destroyExpired(now);
    // Keys past their end are refused by check() already; revoking them here frees their place in
    // the api_keys quota, so rolling a key every month never fills it. Last: the erasure above is
    // what must not wait.
    await this.keys.revokeExpired(now);
    return dropped;
  }

  async get(id: string): Promise<ApiKey | undefined> {
    const row = await this.keys.byId(id);
    return row && toKey(row);
  }

  async list(accountId: string): Promise<ApiKey[]> {
    return (await this.keys.list(accountId)).map(toKey);
  }

  async check(secret: string | undefined): Promise<KeyCheck> {
    if (!secret) return { ok: false, reason: 'missing' };
    // A typo, a look-alike or random garbage fails its checksum here and costs no store lookup; it
    // is refused exactly as an unknown key is, so the answer tells nothing about the format.
    if (keyShape(secret) === KEY_SHAPES.malformed) return { ok: false, reason: 'unknown' };
    const hash = sha256(secret);
    const row = await this.keys.byHash(hash);
    if (!row || !sameHash(row.keyHash, hash)) return { ok: false, reason: 'unknown' };
    if (row.revokedAt !== null) return { ok: false, reason: 'revoked' };
    if (!row.isActive) return { ok: false, reason: 'disabled' };
    if (row.expiresAt !== null && row.expiresAt <= this.now()) return { ok: false, reason: 'expired' };
    if (row.accountStatus !== 'active') return { ok: false, reason: 'suspended' };
    return { ok: true, key: toKey(row), accountStatus: row.accountStatus };
  }

  async setActive(id: string, active: boolean): Promise<boolean> {
    return this.keys.setActive(id, active);
  }

  async revoke(id: string, now: number): Promise<boolean> {
    return this.keys.revoke(id, now);
  }

  /**
   * The full secret while the reveal window is open; after it (or once revoked) the sealed copy is
   * dropped and the key `can no longer be shown` (410).
   */
  async reveal(id: string, now: number): Promise<string> {
    const row = await this.keys.byId(id);
    if (!row) throw new AppError(ERROR_CODES.keyNotFound, 'API key not found', { statusCode: 404 });
    if (row.sealed === null || row.revealUntil === null || row.revealUntil < now || row.revokedAt !== null) {
      if (row.sealed !== null) await this.keys.forgetSealed(id);
      throw new AppError(ERROR_CODES.keyGone, 'API key can no longer be shown', { statusCode: 410 });
    }
    const secret = await this.sealer.unseal(row.sealed);
    if (secret === undefined) {
      await this.keys.forgetSealed(id);
      throw new AppError(ERROR_CODES.keyGone, 'API key can no longer be shown', { statusCode: 410 });
    }
    return secret;
  }
}

function toKey(row: ApiKeyRow): ApiKey {
  return {
    id: row.id,
    accountId: row.accountId,
    name: row.name,
    keyPrefix: row.keyPrefix,
    role: row.role as Role,
    isActive: row.isActive,
    revokedAt: row.revokedAt,
    createdAt: row.createdAt,
    expiresAt: row.expiresAt,
    replacedBy: row.replacedBy,
  };
}
