import { csvLine, escapeFormula } from '../jobs/csv-writer.js';
import type { SnapshotRecord } from '../storage/monitor-result-records.js';
import { LIST_SEPARATOR } from '../../pipelines/email-breaches.js';

/**
 * The header of a run's results CSV: `target`, `has_changes`, one column per tracked field holding
 * its value in this run (`data[field]`), and `changes`, the JSON of `{field: {old, new}}` (empty
 * when nothing changed).
 */
export function resultCsvHeader(fields: readonly string[]): string[] {
  return ['target', 'has_changes', ...fields, 'changes'];
}

/**
 * A value as one cell: text as it is, numbers and booleans as written, a list joined by `;` (the one
 * form lists take in every CSV Sluice writes: job result files and a run's changes file too), any
 * other object as JSON, absent or null empty.
 */
function cell(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  if (Array.isArray(value) && value.every((v) => typeof v !== 'object' || v === null)) return value.map((v) => (v === null ? '' : String(v))).join(LIST_SEPARATOR);
  return JSON.stringify(value);
}

/**
 * Every cell passes escapeFormula: a target or a breach name is someone else's text, and a
 * spreadsheet would run `=HYPERLINK(...)` from it when the customer opens the file.
 */
export function resultCsvCells(fields: readonly string[], s: SnapshotRecord): string[] {
  const cells = [s.target, String(s.hasChanges), ...fields.map((f) => cell(s.data[f])), s.changes === null ? '' : JSON.stringify(s.changes)];
  return cells.map(escapeFormula);
}

/** The CSV text, a store page at a time: memory holds one page whatever the run's size. */
export async function* resultCsv(fields: readonly string[], pages: AsyncIterable<SnapshotRecord[]>): AsyncIterable<string> {
  yield csvLine(resultCsvHeader(fields));
  for await (const page of pages) {
    let text = '';
    for (const s of page) text += csvLine(resultCsvCells(fields, s));
    yield text;
  }
}
