import type { BreachRecord } from '../../storage/records.js';
import type { BreachesPort } from '../../storage/store.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';

/** Lookup kind of phone breaches: billing, the result cache and the provider map use it. */
import { PHONE_BREACHES_KIND } from '../../storage/directory-rules.js';

export { PHONE_BREACHES_KIND };

/** Spec 4.4 without `credits`, which the engine adds. Dates are ISO `YYYY-MM-DD`. */
export interface PhoneBreachResult {
  /** E.164, as the key. */
  phone: string;
  breached: boolean;
  total_breaches: number;
  /** Null when the number is in no breach, or in none with a known date. */
  first_breached: string | null;
  last_breached: string | null;
  summary: string;
}

/** Breach names a summary spells out; the rest are counted, so a cell stays readable. */
const NAMED_IN_SUMMARY = 5;

/**
 * The answer for one number from its breach records, which must come ordered by date (undated
 * last), then name: the summary lists them in that order, so the same index always gives the same
 * bytes, which a resumed job's output depends on.
 */
export function breachResult(phone: string, records: readonly BreachRecord[]): PhoneBreachResult {
  if (records.length === 0) {
    return { phone, breached: false, total_breaches: 0, first_breached: null, last_breached: null, summary: 'Not found in any known breach' };
  }
  const dates = records.flatMap((r) => (r.breachedAt === null ? [] : [r.breachedAt]));
  const first = dates[0] ?? null;
  const last = dates[dates.length - 1] ?? null;
  const count = records.length === 1 ? '1 breach' : `${records.length} breaches`;
  const span = first === null ? '' : first === last ? ` (${first})` : ` (${first} to ${last})`;
  const names = records.slice(0, NAMED_IN_SUMMARY).map((r) => r.breach);
  const more = records.length > NAMED_IN_SUMMARY ? ` and ${records.length - NAMED_IN_SUMMARY} more` : '';
  return {
    phone,
    breached: true,
    total_breaches: records.length,
    first_breached: first,
    last_breached: last,
    summary: `Found in ${count}${span}: ${names.join(', ')}${more}`,
  };
}

/**
 * Answers from the breach index that `sluice import breaches` loads, one store read per batch.
 * Keys are E.164 numbers; a number the index does not hold is an answer too (`breached: false`),
 * so every outcome is ok, and a failing read is thrown for the engine to retry.
 */
export class EmbeddedBreachIndex implements LookupProvider<PhoneBreachResult> {
  readonly kind = PHONE_BREACHES_KIND;
  readonly name = 'embedded-phone-breaches';
  /** The store takes the keys as one bound list, so there is no host-parameter limit to mind. */
  readonly maxBatch = 1_000;
  readonly answersLocally = true;

  constructor(private readonly breaches: BreachesPort) {}

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<PhoneBreachResult>[]> {
    signal?.throwIfAborted();
    const byPhone = await this.breaches.records(keys);
    return keys.map((key) => ({ ok: true, result: breachResult(key, byPhone.get(key) ?? []) }));
  }
}
