import type { JobSummary } from '../jobs/job-summary.js';

/** The human form of a job summary; `--json` prints the summary object itself. */
export function formatJob(s: JobSummary): string {
  const lines = [
    `job        ${s.id} (${s.type})`,
    `status     ${s.status}${s.reason ? ` (${s.reason})` : ''}`,
    `account    ${s.account_id}`,
    `rows       ${s.rows.processed}/${s.rows.total ?? '?'} processed, ${s.rows.found} found, ${s.rows.invalid} invalid, ${s.rows.duplicate} duplicate, ${s.rows.error} error`,
    `credits    ${s.credits_used}`,
  ];
  if (s.error_message) lines.push(`error      ${s.error_message}`);
  if (s.outputs.all) lines.push(`outputs    ${[s.outputs.all, s.outputs.found, s.outputs.errors].filter((o) => o !== null).join(', ')}`);
  return `${lines.join('\n')}\n`;
}
