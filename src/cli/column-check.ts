import fs from 'node:fs';
import { jobLookups } from '../../pipelines/index.js';
import { classifiedInput, classifyRows } from '../jobs/classify-rows.js';
import type { EngineDeps } from '../jobs/engine-deps.js';
import { AppError, ERROR_CODES, isAppError } from '../shared/errors.js';
import type { JobOptions } from '../storage/job-records.js';

const COLUMN_CODES: ReadonlySet<string> = new Set([ERROR_CODES.columnNotFound, ERROR_CODES.ambiguousColumn, ERROR_CODES.noKeyColumn]);

/**
 * A column the user named (`--column`, `--lookup TYPE:COLUMN`) is looked for in the file's header
 * before any job is made, as an unknown `--default-country` is: a typo is a usage mistake (exit 2),
 * not a failed job record to clean up. The header is read as the job reads it (the first batch of
 * `classifyRows`: same decoding, delimiter and matching); other file problems stay the job's to report.
 */
export async function checkNamedColumns(deps: Pick<EngineDeps, 'limits'>, file: string, job: { type: string; options: JobOptions }): Promise<void> {
  const lookups = jobLookups(job.type, job.options);
  if (job.options.column === undefined && !lookups.some((l) => l.column !== undefined)) return;
  const input = fs.createReadStream(file);
  try {
    const rows = classifyRows(input, { options: job.options, lookups }, deps.limits, classifiedInput(lookups));
    await rows.next();
    await rows.return(undefined);
  } catch (e: unknown) {
    // The column's own code (column_not_found, ...), as the job would have failed with, so that a
    // script matches one code whichever way the file came in; `usage` makes it exit 2, not 1.
    if (isAppError(e) && COLUMN_CODES.has(e.code)) throw new AppError(e.code, `${e.message} (nothing was submitted)`, { cause: e, details: { ...e.details, usage: true } });
  } finally {
    input.destroy();
  }
}
