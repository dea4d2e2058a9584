import type { JobPhase, JobStatus } from './job-states.js';

export interface JobOptions {
  /** Header the caller named as the key column (compared without case). */
  column?: string;
  /** Several lookups per row, in output order; the job's `type` is then their types joined by commas. */
  lookups?: { type: string; column?: string }[];
  downloadLink?: boolean;
  /** ISO 3166-1 alpha-2 country for phone numbers written without a country code. */
  defaultCountry?: string;
  /**
   * Failure budget: the share (0 to 1) of the job's rows that may end as `error`. One row more and
   * the job fails with `error_budget_exceeded`. Unset in jobs created before budgets existed.
   */
  maxErrorRate?: number;
  /** The input's cell separator, when the caller gave it; unset: detected from the first lines. */
  delimiter?: InputDelimiter;
  /** The input's text encoding, when the caller gave it; unset: detected (see the input rules in docs/reference/file-formats.md). */
  encoding?: InputEncoding;
  /** Header of the column holding each row's country, for phone numbers written without a country code. */
  countryColumn?: string;
  /** Result files start with a UTF-8 BOM, so that Excel opens accented text correctly. */
  excel?: boolean;
  /**
   * Every key is looked up afresh: the result cache is not read (it is still written). A monitor
   * run sets it, or a remote provider's cached answer would hide every change for the window.
   */
  fresh?: boolean;
}

export const INPUT_DELIMITERS = [',', ';', '\t', '|'] as const;
export type InputDelimiter = (typeof INPUT_DELIMITERS)[number];
export const INPUT_ENCODINGS = ['utf-8', 'utf-16le', 'utf-16be', 'windows-1252', 'iso-8859-1'] as const;
export type InputEncoding = (typeof INPUT_ENCODINGS)[number];

export interface JobRecord {
  id: string;
  accountId: string;
  type: string;
  status: JobStatus;
  phase: JobPhase;
  reason: string | null;
  errorMessage: string | null;
  inputKey: string;
  inputName: string | null;
  options: JobOptions;
  header: string[] | null;
  keyColumn: number | null;
  totalRows: number | null;
  chunkCount: number | null;
  processedRows: number;
  foundRows: number;
  invalidRows: number;
  duplicateRows: number;
  errorRows: number;
  creditsUsed: number;
  leaseEpoch: number;
  attempts: number;
  resultAllKey: string | null;
  resultFoundKey: string | null;
  resultErrorsKey: string | null;
  createdAt: number;
  startedAt: number | null;
  updatedAt: number;
  finishedAt: number | null;
  /** Per-country counts of the job's phone numbers, set by the split; null before it or without phones. */
  countries: PhoneCountryCounts | null;
  /**
   * A running job's leases, run out or not, on the job and on its pending chunks (one per owner, the
   * latest expiry), read with the job by `get`, `require` and `list`; absent elsewhere and for jobs
   * that are not running. What `jobActivity` tells stalled jobs by.
   */
  work?: WorkLease[];
}

/** One holder of a running job's work, as the store last recorded it. */
export interface WorkLease {
  owner: string | null;
  expiresAt: number;
}

/** What the split read of a job's phone numbers: numbers per country they ended in, and overrides. */
export interface PhoneCountryCounts {
  /** ISO alpha-2 country (or `001` for +800-style numbers) to the number of rows read as it. */
  byCountry: Record<string, number>;
  /** Numbers whose own `+CC` disagreed with their row's country cell, and won. */
  overrides: number;
}

export interface ChunkRecord {
  jobId: string;
  chunkIndex: number;
  firstRow: number;
  rowCount: number;
  cursor: number;
  status: 'pending' | 'done';
  leaseEpoch: number;
  attempts: number;
  /** 0 for the first run over every row; each retry of the chunk's failed rows is one pass more. */
  pass: number;
  /** Rows this pass works through: `rowCount` in the first pass, the failed rows in a retry. */
  passRows: number;
  /** One byte per row (ROW_FLAGS) once the chunk is done, kept only when some row failed. */
  rowFlags: Buffer | null;
}

export interface Lease {
  owner: string;
  epoch: number;
}

/** One checkpoint batch's result rows. */
export interface BatchOutput {
  /** The rows as result CSV text, in order. */
  allText: string;
  /** Where each row ends in `allText` (in UTF-16 code units), one little-endian uint32 per row. */
  rowEnds: Buffer;
  /** One ROW_FLAGS byte per row. */
  rowFlags: Buffer;
}

/** A batch output as stored: one written before migration 008 has no row ends but its filtered texts. */
export type StoredOutput = Omit<BatchOutput, 'rowEnds'> & { rowEnds: Buffer | null; foundText: string; errorsText: string };

export interface RowCounters {
  processed: number;
  found: number;
  invalid: number;
  duplicate: number;
  error: number;
  credits: number;
}

/**
 * Bits of a row's flag byte: whether the row is in `found` and in `errors`, and in a job with
 * several lookups (at most 3), which of them failed and which found something.
 */
export const ROW_FLAGS = { found: 1, error: 2 } as const;

export function lookupErrorFlag(lookup: number): number {
  return 4 << lookup;
}

export function lookupFoundFlag(lookup: number): number {
  return 32 << lookup;
}

export function countFlagged(flags: Uint8Array, bit: number): number {
  let n = 0;
  for (const f of flags) if (f & bit) n++;
  return n;
}

/** The rows of a stored output whose flags have `bit` (ROW_FLAGS.found or .error), as one text. */
export function flaggedText(output: StoredOutput, bit: typeof ROW_FLAGS.found | typeof ROW_FLAGS.error): string {
  const { allText, rowEnds, rowFlags } = output;
  if (rowEnds === null) return bit === ROW_FLAGS.found ? output.foundText : output.errorsText;
  const runs: string[] = [];
  let start = 0;
  let runStart = -1;
  for (let i = 0; i < rowFlags.length; i++) {
    const end = rowEnds.readUInt32LE(i * 4);
    if ((rowFlags[i]! & bit) !== 0) {
      if (runStart < 0) runStart = start;
    } else if (runStart >= 0) {
      runs.push(allText.slice(runStart, start));
      runStart = -1;
    }
    start = end;
  }
  if (runStart >= 0) runs.push(allText.slice(runStart, start));
  return runs.join('');
}
