/**
 * A lookup service seen by the engine: it takes a batch of normalised keys and answers each one.
 * It never throws for a single key's failure; it says per key whether trying again could help.
 * A provider makes one attempt per call: trying again is `lookupBatch`'s decision alone, so that
 * attempts never multiply through nested retry loops.
 */
export interface LookupProvider<R = unknown> {
  readonly kind: string;
  /** Provider name for limits and logs, e.g. `embedded-gender`. */
  readonly name: string;
  /** Largest batch one call accepts; the engine cuts misses to this size. */
  readonly maxBatch: number;
  /**
   * True for an engine that answers from memory or an index in this data dir, at least as fast as
   * the result cache could: its answers are neither read from nor written to that cache, which
   * would cost every new key a B-tree write in its checkpoint and save nothing. Unset: cached.
   */
  readonly answersLocally?: boolean;
  lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<R>[]>;
}

export type LookupOutcome<R> =
  | { ok: true; result: R }
  /** `retryAfterMs`: the service asked to be tried again no sooner than this (Retry-After). */
  | { ok: false; retryable: boolean; code: string; message: string; retryAfterMs?: number };
