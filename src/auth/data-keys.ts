import { randomBytes } from 'node:crypto';
import { seal, unseal } from './secrets.js';

/**
 * Crypto-shredding (issue 27, finding 1). A secret that must later be erased (a new API key's
 * sealed copy, a webhook's signing secret or bot token) is sealed under a data key of its own
 * window or webhook, never under the seal key itself; erasing it is destroying that data key.
 * Nulling a column is not erasure: SQLite keeps the old bytes in free pages and the WAL,
 * PostgreSQL in dead tuples, a backup in itself. A destroyed data key leaves every copy of the
 * sealed bytes, wherever the engine left them, as noise, even to someone holding the seal key.
 *
 * The data keys live where destruction is under Sluice's control: small files in the data dir on
 * SQLite (overwritten with zeros, then unlinked), shared records on PostgreSQL. Each is wrapped
 * with the seal key, so the ring alone gives nothing away either.
 */
export interface DataKeyRing {
  /** The data key `name`, made and stored (wrapped) by the first caller; every process gets the same one. */
  obtain(name: string): Promise<Buffer>;
  /** The data key `name`, or undefined once destroyed (or never made). */
  read(name: string): Promise<Buffer | undefined>;
  /** Destroys the data key `name`; nothing sealed under it can be opened again. Idempotent. */
  destroy(name: string): Promise<void>;
  /** Names of the data keys with an end time (`purpose@ms`), destroyed or not yet. */
  expiring(): Promise<string[]>;
}

/** Sealed with a data key: `dk1.<key name>.<iv>.<tag>.<body>`; anything else is the older form, sealed with the seal key. */
const FORMAT = 'dk1';

/** Names the ring accepts: they become file names and record names, so nothing that could escape a folder. */
const NAME = /^[a-z]+(?:-[A-Za-z0-9-]+)?(?:@\d+)?$/;

export function checkDataKeyName(name: string): string {
  if (!NAME.test(name)) throw new Error(`bad data key name: ${name}`);
  return name;
}

/** When the data key `name` must be destroyed (its `@ms`), or undefined for keys destroyed on demand. */
export function endOf(name: string): number | undefined {
  const at = name.lastIndexOf('@');
  return at < 0 ? undefined : Number(name.slice(at + 1));
}

export function newDataKey(): Buffer {
  return randomBytes(32);
}

export function wrapDataKey(key: Buffer, sealKey: Buffer): string {
  return seal(key.toString('base64'), sealKey);
}

export function unwrapDataKey(wrapped: string, sealKey: Buffer): Buffer {
  return Buffer.from(unseal(wrapped, sealKey), 'base64');
}

/**
 * The longest a reveal window's data key outlives the window: windows are grouped into slots of
 * this length (at most a minute, at most a quarter of the window), one data key per slot.
 */
export function revealSlotMs(windowMs: number): number {
  return Math.max(1000, Math.min(60_000, Math.floor(windowMs / 4)));
}

/**
 * The data key for a secret revealable from `now` for `windowMs`: the one destroyed at the end of
 * the slot in which the window ends, so that keys created close together share one data key.
 */
export function revealKeyName(now: number, windowMs: number): string {
  const slot = revealSlotMs(windowMs);
  return `reveal@${(Math.floor((now + windowMs) / slot) + 1) * slot}`;
}

export function webhookKeyName(webhookId: string): string {
  return `webhook-${webhookId}`;
}

/**
 * The data key of a webhook's signing secret after a rotation: a new one per rotation, so that
 * destroying the one before erases the old secret wherever the engine left copies of it.
 */
export function rotatedSecretKeyName(webhookId: string): string {
  return `webhook-${webhookId}-${randomBytes(6).toString('hex')}`;
}

/** The data key of a webhook's previous secret, destroyed by the sweep at the end of the overlap. */
export function overlapKeyName(webhookId: string, endsAt: number): string {
  return `rotated-${webhookId}@${endsAt}`;
}

/** Seals and opens secrets under the ring's data keys; opens the older seal-key form too. */
export class ShreddingSealer {
  constructor(
    private readonly ring: DataKeyRing,
    private readonly sealKey: Buffer,
  ) {}

  async seal(plaintext: string, keyName: string): Promise<string> {
    const key = await this.ring.obtain(checkDataKeyName(keyName));
    return `${FORMAT}.${keyName}.${seal(plaintext, key)}`;
  }

  /** The plaintext, or undefined when its data key has been destroyed: the secret is erased. */
  async unseal(sealed: string): Promise<string | undefined> {
    if (!sealed.startsWith(`${FORMAT}.`)) return unseal(sealed, this.sealKey);
    const [, name, ...rest] = sealed.split('.');
    const key = await this.ring.read(checkDataKeyName(name ?? ''));
    return key === undefined ? undefined : unseal(rest.join('.'), key);
  }

  async destroy(keyName: string): Promise<void> {
    await this.ring.destroy(checkDataKeyName(keyName));
  }

  /** Destroys the data key `sealed` was sealed under; nothing for the older seal-key form, which cannot be shredded. */
  async destroyKeyOf(sealed: string | null | undefined): Promise<void> {
    if (!sealed?.startsWith(`${FORMAT}.`)) return;
    await this.destroy(sealed.split('.')[1] ?? '');
  }

  /** Destroys every data key whose end is before `now`; returns how many. */
  async destroyExpired(now: number): Promise<number> {
    let destroyed = 0;
    for (const name of await this.ring.expiring()) {
      const end = endOf(name);
      if (end !== undefined && end <= now) {
        await this.ring.destroy(name);
        destroyed++;
      }
    }
    return destroyed;
  }
}
