/**
 * What a caller sees. `paused` always comes with a reason. A terminal status changes only when an
 * operator asks: `resume` of a failed job, or `retry-failed` of a finished job with failed rows.
 */
export const JOB_STATUSES = {
  queued: 'queued',
  running: 'running',
  paused: 'paused',
  completed: 'completed',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type JobStatus = (typeof JOB_STATUSES)[keyof typeof JOB_STATUSES];

export const TERMINAL_STATUSES: ReadonlySet<JobStatus> = new Set(['completed', 'failed', 'cancelled']);

/** Whether a job may move from `from` to `to`: terminal states never change again, except a failed job that is resumed or retried. */
export function transitionAllowed(from: JobStatus, to: JobStatus): boolean {
  if (TERMINAL_STATUSES.has(from)) return to === JOB_STATUSES.running && from === JOB_STATUSES.failed;
  switch (to) {
    case JOB_STATUSES.running:
      return from === JOB_STATUSES.paused || from === JOB_STATUSES.queued;
    case JOB_STATUSES.paused:
      return from === JOB_STATUSES.running || from === JOB_STATUSES.queued;
    default:
      return true;
  }
}

/** Where a running job is in the engine; each phase is leased by one worker at a time. */
export const JOB_PHASES = {
  split: 'split',
  process: 'process',
  assemble: 'assemble',
  done: 'done',
} as const;
export type JobPhase = (typeof JOB_PHASES)[keyof typeof JOB_PHASES];

/** The `status` column of result rows. */
export const ROW_STATUSES = {
  ok: 'ok',
  invalid: 'invalid',
  duplicate: 'duplicate',
  error: 'error',
} as const;
export type RowStatus = (typeof ROW_STATUSES)[keyof typeof ROW_STATUSES];

export const PAUSE_REASONS = {
  insufficientCredits: 'insufficient_credits',
  operator: 'paused_by_operator',
  /** The lookup provider is down; workers resume the job on their own after a wait. */
  providerUnavailable: 'provider_unavailable',
} as const;

/** Failure budget of a job that names none: up to 5% of its rows may end as `error`. */
export const DEFAULT_MAX_ERROR_RATE = 0.05;

/** `all` every row, `found` the rows with a result, `errors` the rows whose lookup failed. */
export const EXPORT_FILTERS = ['all', 'found', 'errors'] as const;
export type ExportFilter = (typeof EXPORT_FILTERS)[number];
