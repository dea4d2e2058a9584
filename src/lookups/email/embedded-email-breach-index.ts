import { EMAIL_BREACHES_KIND } from '../../storage/directory-rules.js';
import type { EmailBreachRecord } from '../../storage/records.js';
import type { EmailBreachesPort } from '../../storage/store.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';

/** Lookup kind of email breaches: billing, the result cache and the provider map use it. */
export { EMAIL_BREACHES_KIND };

/** One breach of an address. `date` is ISO `YYYY-MM-DD`, or null when the source gave none. */
export interface EmailBreach {
  name: string;
  date: string | null;
  data_classes: string[];
}

/**
 * Spec 4.3's `breach_info` (spec 2.9: "breach history and a services list"). `services` are the
 * breached services' names and `exposed_data` the data classes of all of them, each sorted, so
 * that a client (or a monitor comparing runs) need not walk `breaches` for either.
 */
export interface BreachInfo {
  breached: boolean;
  count: number;
  /** Null when the address is in no breach, or in none with a known date. */
  first_breach: string | null;
  last_breach: string | null;
  services: string[];
  exposed_data: string[];
  /** By date (undated last), then name. */
  breaches: EmailBreach[];
}

/** What the lookup answers for one address; the endpoint adds `credits` and `cached`. */
export interface EmailBreachResult {
  /** The normalised address, as the key. */
  email: string;
  breach_info: BreachInfo;
}

/** Code-unit order, not the locale's: the same index gives the same bytes on every machine. */
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * The answer for one address from its breach records, which must come ordered by date (undated
 * last), then name: `breaches` keeps that order, so a resumed job writes the bytes of a clean run.
 */
export function emailBreachResult(email: string, records: readonly EmailBreachRecord[]): EmailBreachResult {
  const dates = records.flatMap((r) => (r.breachedAt === null ? [] : [r.breachedAt]));
  return {
    email,
    breach_info: {
      breached: records.length > 0,
      count: records.length,
      first_breach: dates[0] ?? null,
      last_breach: dates[dates.length - 1] ?? null,
      services: [...new Set(records.map((r) => r.breach))].sort(byCodeUnits),
      exposed_data: [...new Set(records.flatMap((r) => r.dataClasses))].sort(byCodeUnits),
      breaches: records.map((r) => ({ name: r.breach, date: r.breachedAt, data_classes: [...r.dataClasses] })),
    },
  };
}

/**
 * Answers from the email breach index that `sluice import breaches` loads, one store read per
 * batch. Keys are normalised addresses; an address the index does not hold is an answer too
 * (`breached: false`), so every outcome is ok, and a failing read is thrown for the engine to retry.
 */
export class EmbeddedEmailBreachIndex implements LookupProvider<EmailBreachResult> {
  readonly kind = EMAIL_BREACHES_KIND;
  readonly name = 'embedded-email-breaches';
  /** The store takes the keys as one bound list, so there is no host-parameter limit to mind. */
  readonly maxBatch = 1_000;
  readonly answersLocally = true;

  constructor(private readonly breaches: EmailBreachesPort) {}

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<EmailBreachResult>[]> {
    signal?.throwIfAborted();
    const byEmail = await this.breaches.records(keys);
    return keys.map((key) => ({ ok: true, result: emailBreachResult(key, byEmail.get(key) ?? []) }));
  }
}
