import type { RangeRow } from './password-range-format.js';

/** How a check was made: from the index in this data dir, or from a remote range service. */
export const RANGE_SOURCES = { localIndex: 'local_index', remoteRange: 'remote_range' } as const;
export type RangeSourceName = (typeof RANGE_SOURCES)[keyof typeof RANGE_SOURCES];

/**
 * A range as a source gives it: every row whose hash starts with the prefix, count 0 rows
 * (padding) already dropped; or why there is none, retryable or not (`provider_unavailable` for a
 * source that is down or not there, `lookup_failed` otherwise).
 */
export type RangeOutcome =
  | { ok: true; rows: RangeRow[] }
  | { ok: false; retryable: boolean; code: string; message: string; retryAfterMs?: number };

/**
 * The k-anonymity range protocol's one question: the rows of a 5-hex prefix. Only the prefix is
 * ever given to a source, so nothing that could leave Sluice says more than it.
 */
export interface PasswordRangeSource {
  readonly name: RangeSourceName;
  range(prefix: string, signal?: AbortSignal): Promise<RangeOutcome>;
  close(): Promise<void>;
}
