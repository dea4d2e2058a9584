import type { JobActivity } from '../jobs/job-activity.js';
import type { JobSummary } from '../jobs/job-summary.js';

/** The human form of a job summary (and its activity, when read); `--json` prints the objects themselves. */
export function formatJob(s: JobSummary, activity?: JobActivity): string {
  const lines = [
    `job        ${s.id} (${s.type})`,
    `status     ${s.status}${s.reason ? ` (${s.reason})` : ''}`,
    `account    ${s.account_id}`,
    `rows       ${s.rows.processed}/${s.rows.total ?? '?'} processed, ${s.rows.found} found, ${s.rows.invalid} invalid, ${s.rows.duplicate} duplicate, ${s.rows.error} error`,
    `credits    ${s.credits_used}`,
  ];
  if (activity) lines.push(...formatActivity(s, activity));
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

/** Speed, time left and last progress; for a stalled job, since when and how to continue it. */
function formatActivity(s: JobSummary, a: JobActivity): string[] {
  const speed = a.rows_per_second === null ? 'no rate yet' : `${a.rows_per_second} rows/s`;
  const left = a.eta_seconds === null ? '' : `, about ${formatSeconds(a.eta_seconds)} left`;
  const last = a.last_progress_at === null ? '' : `, last progress ${a.last_progress_at}`;
  const lines = [`progress   ${speed}${left}${last}`];
  if (a.stalled) {
    lines.push(
      `stalled    since ${a.stalled_since ?? '?'}: no live worker holds its work; continue it with \`sluice jobs resume ${s.id}\` (a \`sluice worker\` takes it) or \`sluice jobs resume ${s.id} --wait\` (runs it here)`,
    );
  }
  return lines;
}

export function formatSeconds(s: number): string {
  if (s < 60) return `${Math.ceil(s)}s`;
  const m = Math.floor(s / 60);
  return m < 60 ? `${m}m${String(Math.ceil(s % 60)).padStart(2, '0')}s` : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
