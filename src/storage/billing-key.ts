import { createHmac, hkdfSync } from 'node:crypto';
import { BillingHasher } from './billing-hasher.js';

/**
 * What the billing cache stores in place of a lookup key: 16 bytes that answer "did this account
 * pay for this key" and tell nothing of the key to whoever reads the database without the
 * deployment's secret. Branded, so that a plain key can never be bound where a hash belongs, nor a
 * hash be hashed again: either would make a paid key look unpaid, a second charge.
 */
export type BillingHash = Buffer & { readonly __billingHash: unique symbol };

/** Bytes kept of the HMAC: 128 bits, so two keys of one account and kind never collide in practice. */
export const BILLING_HASH_BYTES = 16;

/**
 * Names kept for reuse, per generation: a batch's keys are hashed for the read before its lookups
 * (freshlyBilled) and again when its commit checks and writes them; at 1,000 rows a batch, two
 * generations of 16,384 hold several batches, a few MB at most whatever the file's size.
 */
const MEMO_GENERATION = 16_384;

/** Fewer keys than this are hashed on the caller's thread: a message each way costs more. */
const OFF_THREAD_MIN = 64;

/** HKDF info: the seal key is never used directly for a second purpose. Versioned with the format. */
const BILLING_KEY_INFO = 'sluice billing-cache v1';

/** The fingerprint that `requireSharedSealKey` records; one formula for the early and late checks. */
export function sealKeyFingerprint(sealKey: Buffer): string {
  return createHmac('sha256', sealKey).update('sluice seal key fingerprint').digest('base64');
}

/**
 * Names keys for the billing cache: HMAC-SHA256(billingKey, kind + '\0' + key), first 16 bytes,
 * where billingKey = HKDF-SHA256(sealKey, info 'sluice billing-cache v1'). The kind is inside the
 * MAC, so one key under two kinds has two unrelated names; '\0' cannot occur in a kind, so no two
 * (kind, key) pairs make one message. HMAC rather than SHA-256 over a secret prefix: the prefix
 * form measured about twice as fast (bench in the report of #18 item 6), but HMAC needs no argument
 * about length extension. At about 3.6 µs a key (200,000-row engine bench: +1.1 s of CPU before
 * the memo) a batch's keys are remembered between its read and its commit, so each is hashed once.
 * Machines that share a database share the seal key (SLUICE_SEAL_KEY), hence these names.
 */
export class BillingKeys {
  private readonly key: Buffer;

  constructor(sealKey: Buffer) {
    this.key = Buffer.from(hkdfSync('sha256', sealKey, Buffer.alloc(0), BILLING_KEY_INFO, 32));
    this.fingerprint = sealKeyFingerprint(sealKey);
    this.hasher = new BillingHasher(this.key, BILLING_HASH_BYTES);
  }

  private readonly hasher: BillingHasher;

  /** Of the seal key these names derive from; compared with the database's before any migration. */
  readonly fingerprint: string;

  /** Per kind, so that a look-up needs no joined string: two generations of key → name. */
  private readonly memo = new Map<string, { current: Map<string, BillingHash>; previous: Map<string, BillingHash> }>();

  hash(kind: string, key: string): BillingHash {
    const memo = this.memoOf(kind);
    let hash = memo.current.get(key) ?? memo.previous.get(key);
    if (hash === undefined) {
      hash = createHmac('sha256', this.key).update(`${kind}\0${key}`).digest().subarray(0, BILLING_HASH_BYTES) as BillingHash;
      remember(memo, key, hash);
    }
    return hash;
  }

  /**
   * As `hash` for each key, those not remembered hashed on a thread of their own (BillingHasher), so
   * that the batch's later `hash` calls, in its checkpoint, find them. A thread that fails is
   * not the batch's failure: the keys are then hashed here.
   */
  async hashMany(kind: string, keys: readonly string[]): Promise<BillingHash[]> {
    const memo = this.memoOf(kind);
    const hashes: (BillingHash | undefined)[] = keys.map((key) => memo.current.get(key) ?? memo.previous.get(key));
    const missing = keys.filter((_, i) => hashes[i] === undefined);
    if (missing.length >= OFF_THREAD_MIN) {
      const made = await this.hasher.hash(kind, missing).catch(() => undefined);
      if (made) {
        let next = 0;
        hashes.forEach((hash, i) => {
          if (hash !== undefined) return;
          hashes[i] = made[next++] as BillingHash;
          remember(memo, keys[i]!, hashes[i]!);
        });
      }
    }
    return hashes.map((hash, i) => hash ?? this.hash(kind, keys[i]!));
  }

  /** Ends the hashing thread, if one was started. */
  close(): Promise<void> {
    return this.hasher.close();
  }

  private memoOf(kind: string): { current: Map<string, BillingHash>; previous: Map<string, BillingHash> } {
    let memo = this.memo.get(kind);
    if (memo === undefined) {
      memo = { current: new Map(), previous: new Map() };
      this.memo.set(kind, memo);
    }
    return memo;
  }

  /** As `hash`, as the lowercase hex that `chargedKeys` answers with. */
  name(kind: string, key: string): string {
    return this.hash(kind, key).toString('hex');
  }
}

function remember(memo: { current: Map<string, BillingHash>; previous: Map<string, BillingHash> }, key: string, hash: BillingHash): void {
  if (memo.current.size >= MEMO_GENERATION) {
    memo.previous = memo.current;
    memo.current = new Map();
  }
  memo.current.set(key, hash);
}
