// @ts-check
// Why a job stopped, in words, with the next step (issue 33): the page shows these instead of raw
// codes or CLI flags. Codes are the API's `reason` values (src/storage/job-states.ts, src/jobs/file-errors.ts).

/** Failures of the file itself: resuming would fail the same way, so the page never offers it. */
export const FILE_REASONS = new Set([
  'invalid_utf8', 'binary_file', 'compressed_file', 'empty_file', 'no_rows', 'no_key_column', 'column_not_found',
  'ambiguous_column', 'line_too_long', 'malformed_csv', 'utf16_without_bom', 'invalid_utf16', 'ambiguous_delimiter',
  'too_many_rows', 'too_many_columns',
]);

const COLUMN_REASONS = new Set(['no_key_column', 'column_not_found', 'ambiguous_column']);

/** @param {number} n */
const count = (n) => n.toLocaleString('en');

/**
 * @param {{ status: string, reason?: string | null, rows: { total: number | null, processed: number } }} job
 * @param {number} available the account's credits available now
 * @returns {string} empty when there is nothing to explain
 */
export function reasonInWords(job, available) {
  const reason = job.reason ?? '';
  if (reason === 'insufficient_credits') {
    const left = job.rows.total === null ? null : Math.max(0, job.rows.total - job.rows.processed);
    const need = left === null ? 'more credits' : `up to ${count(left)} credits (one per row left; rows already paid for cost nothing)`;
    return `Paused: the account ran out of credits. It needs ${need} and has ${count(available)} available. Ask your Sluice operator to top up the account; once credits are available, resume the job here.`;
  }
  if (COLUMN_REASONS.has(reason)) {
    return 'Failed: no column of the file could be used as the key column. Choose the key column in "Start a job" below and start the file again as a new job.';
  }
  if (FILE_REASONS.has(reason)) return `Failed on its file (${reason.replace(/_/g, ' ')}): it would fail the same way again. Fix the file and start it as a new job.`;
  if (reason === 'paused_by_operator') return 'Paused by an operator. Resume it when it should go on.';
  if (reason === 'provider_unavailable') return 'Paused: the lookup service is unavailable. Workers resume it on their own after a wait.';
  if (reason === 'cancelled' || job.status === 'cancelled') return 'Cancelled: it cannot run again. Download the rows done so far, or start the file again as a new job.';
  return reason === '' ? '' : reason.replace(/_/g, ' ');
}

/**
 * Resume is offered only when it can make progress: a paused job with credits to go on (or paused
 * for another reason), a failed job that did not fail on its file, a running job that stalled.
 * @param {{ status: string, reason?: string | null, stalled?: boolean }} job
 * @param {number} available
 */
export function canResume(job, available) {
  if (job.status === 'running') return job.stalled === true;
  if (job.status === 'paused') return job.reason !== 'insufficient_credits' || available > 0;
  if (job.status === 'failed') return !FILE_REASONS.has(job.reason ?? '');
  return false;
}
