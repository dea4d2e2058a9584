import { randomBytes } from 'node:crypto';
import type { RangeRow } from './password-range-format.js';

/**
 * Rows a padded answer has at least. HIBP pads to a random 800 to 1,000; a fixed floor tells an
 * observer of response sizes no more, and is simpler to state: below it, every range looks alike.
 */
export const PADDED_MIN_ROWS = 1_000;

/**
 * The range as served: real rows plus random suffixes of count 0 up to `minRows`, all in suffix
 * order, so that padding cannot be told from data by its place. A random suffix that happens to be
 * a real one is drawn again.
 */
export function padRange(rows: readonly RangeRow[], minRows = PADDED_MIN_ROWS): RangeRow[] {
  const taken = new Set(rows.map((r) => r.suffix));
  const padded = [...rows];
  while (padded.length < minRows) {
    const suffix = randomBytes(18).toString('hex').slice(0, 35).toUpperCase();
    if (taken.has(suffix)) continue;
    taken.add(suffix);
    padded.push({ suffix, count: 0 });
  }
  return padded.sort((a, b) => (a.suffix < b.suffix ? -1 : a.suffix > b.suffix ? 1 : 0));
}

/** HIBP's body: `SUFFIX:COUNT` lines joined by CRLF. */
export function rangeBody(rows: readonly RangeRow[]): string {
  return rows.map((r) => `${r.suffix}:${r.count}`).join('\r\n');
}
