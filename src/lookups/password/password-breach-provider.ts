import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import type { PasswordRangeSource, RangeOutcome, RangeSourceName } from './password-range-source.js';

/** Lookup kind of password breaches: billing and the provider map use it. */
export const PASSWORD_BREACHES_KIND = 'password_breaches';

/** What a check answers; the endpoint adds `credits` and `cached`. */
export interface PasswordBreachResult {
  breached: boolean;
  /** Times the password was seen in breaches; 0 when it was not. */
  count: number;
  /** Where the range came from. */
  source: RangeSourceName;
  /** The 5 hex digits of the SHA-1 that were looked up: all that a source was ever given. */
  prefix: string;
}

/**
 * Checks SHA-1s (40 uppercase hex digits, the keys) against ranges: each distinct prefix is asked
 * once per batch, and the rest of the hash is compared here, so no source sees more than the
 * prefix. A range's failure is each of its keys' failure, with the source's retry advice.
 */
export class PasswordBreachProvider implements LookupProvider<PasswordBreachResult> {
  readonly kind = PASSWORD_BREACHES_KIND;
  readonly name: string;
  readonly maxBatch = 100;
  /**
   * Not because the source is local (a remote range is not), but because the key is a password's
   * SHA-1: the result cache would store it in the clear, a password in all but name for any
   * dictionary. Billing keeps only its keyed hash (src/storage/billing-key.ts).
   */
  readonly answersLocally = true;

  constructor(readonly source: PasswordRangeSource) {
    this.name = `password-range-${source.name}`;
  }

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<PasswordBreachResult>[]> {
    const prefixes = [...new Set(keys.map((key) => key.slice(0, 5)))];
    const ranges = new Map<string, RangeOutcome>();
    await Promise.all(prefixes.map(async (prefix) => ranges.set(prefix, await this.source.range(prefix, signal))));
    return keys.map((key) => {
      const prefix = key.slice(0, 5);
      const range = ranges.get(prefix)!;
      if (!range.ok) return range;
      const suffix = key.slice(5);
      const row = range.rows.find((r) => r.suffix === suffix);
      return { ok: true, result: { breached: row !== undefined, count: row?.count ?? 0, source: this.source.name, prefix } };
    });
  }

  close(): Promise<void> {
    return this.source.close();
  }
}
