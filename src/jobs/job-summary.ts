import type { JobRecord } from '../storage/job-records.js';

/** What operators and callers see of a job: the CLI's `--json`, the API and events share it. */
export interface JobSummary {
  id: string;
  type: string;
  account_id: string;
  status: string;
  reason: string | null;
  error_message: string | null;
  input_name: string | null;
  rows: { total: number | null; processed: number; found: number; invalid: number; duplicate: number; error: number };
  percent: number;
  credits_used: number;
  /** The failure budget: the share of rows that may end as `error` before the job fails. */
  max_error_rate: number | null;
  outputs: { all: string | null; found: string | null; errors: string | null };
  /**
   * Phone jobs, once split: how many numbers ended in which country (ISO alpha-2, `001` for +800
   * and other numbers of no country), and how many whose own `+CC` overruled their row's country.
   */
  countries?: Record<string, number>;
  country_overrides?: number;
  created_at: string;
  started_at: string | null;
  finished_at: string | null;
}

export function jobSummary(job: JobRecord): JobSummary {
  const total = job.totalRows;
  const percent = job.status === 'completed' ? 100 : total ? Math.floor((job.processedRows / total) * 1000) / 10 : 0;
  return {
    id: job.id,
    type: job.type,
    account_id: job.accountId,
    status: job.status,
    reason: job.reason,
    error_message: job.errorMessage,
    input_name: job.inputName,
    rows: {
      total,
      processed: job.processedRows,
      found: job.foundRows,
      invalid: job.invalidRows,
      duplicate: job.duplicateRows,
      error: job.errorRows,
    },
    percent,
    credits_used: job.creditsUsed,
    max_error_rate: job.options.maxErrorRate ?? null,
    outputs: { all: job.resultAllKey, found: job.resultFoundKey, errors: job.resultErrorsKey },
    // Absent rather than null for jobs with no phone numbers: their summaries stay as they were.
    ...(job.countries ? { countries: job.countries.byCountry, country_overrides: job.countries.overrides } : {}),
    created_at: iso(job.createdAt)!,
    started_at: iso(job.startedAt),
    finished_at: iso(job.finishedAt),
  };
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}
