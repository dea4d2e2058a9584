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
  if (s.countries) lines.push(`countries  ${formatCountries(s.countries, s.country_overrides ?? 0)}`);
  if (s.error_message) lines.push(`error      ${s.error_message}`);
  if (s.outputs.all) lines.push(`outputs    ${[s.outputs.all, s.outputs.found, s.outputs.errors].filter((o) => o !== null).join(', ')}`);
  return `${lines.join('\n')}\n`;
}

/**
 * `US 1573, DE 12, 3 more (5), 2 by their own +CC`: the largest first, at most eight named, so that a
 * file of 200 countries still fits one line.
 */
function formatCountries(countries: Record<string, number>, overrides: number): string {
  const entries = Object.entries(countries).sort((a, b) => b[1] - a[1] || a[0].localeCompare(b[0]));
  const shown = entries.slice(0, 8).map(([country, n]) => `${country} ${n}`);
  const rest = entries.slice(8);
  if (rest.length > 0) shown.push(`${rest.length} more (${rest.reduce((sum, [, n]) => sum + n, 0)})`);
  const text = shown.join(', ');
  return overrides > 0 ? `${text}; ${overrides} read by their own +CC against the row's country` : text;
}
