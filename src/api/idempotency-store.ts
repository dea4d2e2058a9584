import type { IdempotencyClaim } from '../storage/records.js';
import type { IdempotencyPort } from '../storage/store.js';

export type Claim = IdempotencyClaim;

/** A claim whose request died before finishing is taken over after this long. */
const STALE_MS = 15 * 60_000;
/** Keys are remembered for a day, as the usual idempotency-key convention has it. */
const KEEP_MS = 24 * 3600_000;

/**
 * Idempotency-Key bookkeeping for uploads: the first request claims the key, finishes with the
 * job it made and the request's fingerprint; a retry gets that job, a different request 422.
 */
export class IdempotencyStore {
  constructor(private readonly port: IdempotencyPort) {}

  async claim(accountId: string, key: string, now: number): Promise<Claim> {
    return this.port.claim(accountId, key, now, STALE_MS, KEEP_MS);
  }

  async finish(accountId: string, key: string, fingerprint: string, jobId: string): Promise<void> {
    await this.port.finish(accountId, key, fingerprint, jobId);
  }

  /** The claimed request failed: let a retry start afresh. */
  async release(accountId: string, key: string): Promise<void> {
    await this.port.release(accountId, key);
  }
}
