import type { JobLookup } from '../../pipelines/index.js';
import type { LookupOutcome } from '../lookups/lookup-provider.js';
import { ROW_KINDS, type RowKey } from './chunk-format.js';
import { csvLine, escapeFormula } from './csv-writer.js';
import { ROW_STATUSES, type RowStatus } from '../storage/job-states.js';

/**
 * How the result columns are laid out.
 *
 * One lookup: the original cells, the pipeline's result columns, then `status`, `credits`,
 * `cached`, `error`.
 *
 * Several lookups: the original cells, then per lookup, in the order asked, its result columns
 * followed by `<type>_status`, `<type>_credits`, `<type>_cached` and `<type>_error`; then the row's
 * `status` (`error` if any lookup failed, else `ok` if any answered, else `duplicate` if any
 * repeated an earlier row, else `invalid`) and `credits` (the sum).
 */
export function outputHeader(header: readonly string[] | null, lookups: readonly JobLookup[]): string {
  const cells = (header ?? []).map(escapeFormula);
  if (lookups.length === 1) return csvLine([...cells, ...lookups[0]!.pipeline.resultColumns, 'status', 'credits', 'cached', 'error']);
  for (const { pipeline } of lookups) {
    cells.push(...pipeline.resultColumns, ...LOOKUP_TAIL.map((name) => `${pipeline.type}_${name}`));
  }
  return csvLine([...cells, 'status', 'credits']);
}

const LOOKUP_TAIL = ['status', 'credits', 'cached', 'error'] as const;

/** Cells one lookup adds to a row of a several-lookup job: its results, then LOOKUP_TAIL. */
export function groupWidth(lookup: JobLookup): number {
  return lookup.pipeline.resultColumns.length + LOOKUP_TAIL.length;
}

/** What one lookup made of one row, ready to render. */
export interface LookupCell {
  key: RowKey;
  /** undefined for an invalid key. */
  outcome: LookupOutcome<unknown> | undefined;
  /** The answer came from the result cache. */
  hit: boolean;
  /** This row paid for the key. */
  charged: boolean;
}

/** One lookup's status for a row, and whether its answer belongs in `found`. */
export function lookupStatus(lookup: JobLookup, cell: LookupCell): { status: RowStatus; found: boolean } {
  if (cell.outcome === undefined) return { status: ROW_STATUSES.invalid, found: false };
  if (!cell.outcome.ok) return { status: ROW_STATUSES.error, found: false };
  const found = lookup.pipeline.isFound(cell.outcome.result);
  return { status: cell.key.kind === ROW_KINDS.duplicate ? ROW_STATUSES.duplicate : ROW_STATUSES.ok, found };
}

/** A lookup's cells in a row: its result columns, then status (from `lookupStatus`), credits, cached and error. */
export function lookupCells(lookup: JobLookup, cell: LookupCell, status: RowStatus): string[] {
  const results =
    cell.outcome?.ok === true ? lookup.pipeline.resultCells(cell.outcome.result).map(escapeFormula) : lookup.pipeline.resultColumns.map(() => '');
  // Whether a repeat's answer came from the cache depends on chunk timing, so it is not shown.
  const cached = status === ROW_STATUSES.ok && cell.hit;
  const error = cell.outcome === undefined ? cell.key.value : cell.outcome.ok ? '' : cell.outcome.code;
  return [...results, status, status === ROW_STATUSES.ok && cell.charged ? '1' : '0', cached ? 'true' : 'false', escapeFormula(error)];
}

/** The row-level status of a several-lookup row, from its lookups' statuses. */
export function rowStatus(statuses: readonly string[]): RowStatus {
  if (statuses.includes(ROW_STATUSES.error)) return ROW_STATUSES.error;
  if (statuses.includes(ROW_STATUSES.ok)) return ROW_STATUSES.ok;
  if (statuses.includes(ROW_STATUSES.duplicate)) return ROW_STATUSES.duplicate;
  return ROW_STATUSES.invalid;
}

/** The original cells, escaped, padded to the header's width so result columns stay under their names. */
export function originalCells(width: number, original: readonly string[]): string[] {
  const cells = original.map(escapeFormula);
  while (cells.length < width) cells.push('');
  return cells;
}
