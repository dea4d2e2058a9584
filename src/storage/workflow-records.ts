import type { Lease } from './job-records.js';

/** Workflows as stored (docs/workflows.md): plain data, the same from both adapters. */

export interface WorkflowRecord {
  id: string;
  accountId: string;
  name: string;
  description: string;
  status: string;
  /** JSON text of the trigger and the steps of the current version. */
  trigger: string;
  steps: string;
  version: number;
  createdAt: number;
  updatedAt: number;
}

export interface WorkflowWrite {
  name: string;
  description: string;
  status: string;
  trigger: string;
  steps: string;
  /** When a schedule trigger next fires; null for other triggers and for a workflow that is not active. */
  nextRunAt: number | null;
  /**
   * The monitor a monitor_event trigger listens to (null or absent: none). Its runs that finish
   * after the save start the workflow; a workflow that is not active, or made active again, or
   * moved to another monitor, starts from the save's time (no replay of what it did not listen to).
   */
  monitorId?: string | null;
}

/** A completed monitor run with changes that a monitor_event workflow has not taken up yet. */
export interface DueMonitorEvent {
  workflowId: string;
  accountId: string;
  monitorId: string;
  monitorRunId: string;
  finishedAt: number;
}

/** Starting the run of one monitor event: `finishedAt` becomes the workflow's cursor if it was still before it. */
export interface MonitorEventFire {
  workflowId: string;
  finishedAt: number;
  runId: string;
  input: string;
  maxInFlight: number;
  now: number;
}

/** A scheduled workflow whose time has come, as the scheduler reads it. */
export interface DueSchedule {
  id: string;
  accountId: string;
  trigger: string;
  nextRunAt: number;
}

/** Starting a due time's run: `nextAt` replaces `dueAt` only if no other process moved it first. */
export interface ScheduleFire {
  workflowId: string;
  dueAt: number;
  nextAt: number | null;
  runId: string;
  input: string;
  maxInFlight: number;
  now: number;
}

/** `started`: this call queued the run; `taken`: another process had; `limited`: the account was at its runs-in-flight limit, the due time passed without a run. */
export type ScheduleFireResult = 'started' | 'taken' | 'limited';

export const WORKFLOW_RUN_STATUSES = { queued: 'queued', running: 'running', completed: 'completed', failed: 'failed', cancelled: 'cancelled' } as const;
export type WorkflowRunStatus = (typeof WORKFLOW_RUN_STATUSES)[keyof typeof WORKFLOW_RUN_STATUSES];

export interface WorkflowRunRecord {
  id: string;
  accountId: string;
  workflowId: string;
  workflowVersion: number;
  workflowName: string;
  status: WorkflowRunStatus;
  /** JSON text: the run's input, and the outputs of its steps so far by step id. */
  input: string;
  outputs: string;
  /** Index of the next step to execute. */
  cursor: number;
  /** Failed attempts of the step at the cursor. */
  attempts: number;
  /** When a waiting delay (or a retry's backoff) is due; null when the run is not waiting. */
  wakeAt: number | null;
  stepsTotal: number;
  stepsCompleted: number;
  creditsUsed: number;
  errorCode: string | null;
  errorMessage: string | null;
  failedStep: string | null;
  createdAt: number;
  startedAt: number | null;
  completedAt: number | null;
}

export interface WorkflowLogRecord {
  id: string;
  workflowId: string;
  runId: string;
  stepId: string | null;
  level: string;
  message: string;
  /** JSON text (spec 2.7: metadata is a string of encoded JSON). */
  metadata: string;
  createdAt: number;
}

/** A leased run with the steps of the version it pinned. */
export interface WorkflowRunClaim {
  run: WorkflowRunRecord;
  /** JSON text of the pinned version's steps. */
  steps: string;
  lease: Lease;
}

/**
 * Everything one step changes, committed at once and fenced: refused (nothing written) unless the
 * lease epoch is still the claim's and the cursor is still `cursor`.
 */
export interface StepCommit {
  runId: string;
  accountId: string;
  lease: Lease;
  cursor: number;
  /** Where the run goes: its next cursor, and its state. */
  next: {
    cursor: number;
    status: WorkflowRunStatus;
    attempts: number;
    wakeAt: number | null;
    /** The whole outputs object as JSON text, when the step added one. */
    outputs?: string;
    stepsCompleted: number;
    error?: { code: string; message: string; step: string } | undefined;
  };
  /**
   * A lookup step's price: the ledger line's id is a pure function of (account, run, step). With
   * `repeatFree`, the key goes through the billing cache the jobs and single lookups use: the
   * commit is refused (`billed`, nothing written) when the account paid for it after `since`, and
   * a charge that commits records the key there.
   */
  charge?: { ledgerId: string; amount: number; kind: string; repeatFree?: { key: string; since: number } };
  /** A lookup's fresh answer for the shared result cache, written with the step. */
  cache?: readonly { kind: string; key: string; result: unknown }[];
  /** A webhook step's delivery, written into the delivery queue with the step. */
  delivery?: { id: string; webhookId: string; messageId: string; eventType: string; payload: string };
  logs: readonly Omit<WorkflowLogRecord, 'createdAt' | 'workflowId' | 'runId'>[];
  leaseUntil: number;
  now: number;
}

/** `billed`: the charge's key was paid for meanwhile (by a job, a single lookup or another run); nothing was written. */
export type StepCommitResult = 'committed' | 'lease_lost' | 'insufficient_credits' | 'billed';
