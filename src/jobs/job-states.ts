/** What a caller sees. `paused` always comes with a reason; the terminal ones never change again. */
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

export const EXPORT_FILTERS = ['all', 'found'] as const;
export type ExportFilter = (typeof EXPORT_FILTERS)[number];
