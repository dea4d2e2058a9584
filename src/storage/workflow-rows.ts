import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { StepCommit } from './workflow-records.js';

/** Column lists both adapters select, aliased to the record fields (PostgreSQL quotes the aliases). */
export function workflowColumns(q: string): string {
  return `id, account_id AS ${q}accountId${q}, name, description, status, trigger, steps, version, created_at AS ${q}createdAt${q}, updated_at AS ${q}updatedAt${q}`;
}

export function runColumns(q: string): string {
  return `id, account_id AS ${q}accountId${q}, workflow_id AS ${q}workflowId${q}, workflow_version AS ${q}workflowVersion${q}, workflow_name AS ${q}workflowName${q},
    status, input, outputs, cursor, attempts, wake_at AS ${q}wakeAt${q}, steps_total AS ${q}stepsTotal${q}, steps_completed AS ${q}stepsCompleted${q},
    credits_used AS ${q}creditsUsed${q}, error_code AS ${q}errorCode${q}, error_message AS ${q}errorMessage${q}, failed_step AS ${q}failedStep${q},
    created_at AS ${q}createdAt${q}, started_at AS ${q}startedAt${q}, completed_at AS ${q}completedAt${q}`;
}

export function logColumns(q: string): string {
  return `id, workflow_id AS ${q}workflowId${q}, run_id AS ${q}runId${q}, step_id AS ${q}stepId${q}, level, message, metadata, created_at AS ${q}createdAt${q}`;
}

/**
 * Runs that may be claimed: queued, or running with a lapsed lease and no wake time still to come.
 * A waiting run's lease_until is its wake time, so the due-ordered index finds due runs first
 * however many sleep.
 */
export const CLAIMABLE = "status IN ('queued', 'running') AND lease_until <= $now AND (wake_at IS NULL OR wake_at <= $now)";

/**
 * An update's new event cursor (docs/workflows.md, monitor_event): kept while the workflow stays
 * active on the same monitor; else the update's time, so that a workflow made active again, or
 * moved to another monitor, does not replay runs it was not listening to. SET reads the old row.
 */
export function KEPT_EVENT_CURSOR(monitorId: string, status: string, now: string): string {
  return `CASE WHEN ${monitorId} IS NULL THEN NULL
    WHEN monitor_id = ${monitorId} AND status = 'active' AND ${status} = 'active' AND event_after IS NOT NULL THEN event_after ELSE ${now} END`;
}

export function workflowNotFound(id: string): AppError {
  return new AppError(ERROR_CODES.workflowNotFound, `no workflow ${id}`, { statusCode: 404 });
}

export function runNotFound(id: string): AppError {
  return new AppError(ERROR_CODES.workflowRunNotFound, `no workflow run ${id}`, { statusCode: 404 });
}

export function runEnded(id: string, status: string, wanted: string): AppError {
  return new AppError(ERROR_CODES.invalidState, `run ${id} is ${status}: ${wanted}`, { statusCode: 409, details: { status } });
}

export function tooManyRuns(limit: number): AppError {
  return new AppError(ERROR_CODES.tooManyRuns, `the account already has ${limit} workflow runs queued or running`, { statusCode: 429, details: { limit } });
}

export function notActive(id: string, status: string): AppError {
  return new AppError(ERROR_CODES.invalidState, `workflow ${id} is ${status}: only an active workflow runs`, { statusCode: 409, details: { status } });
}

/**
 * A commit that lets go of the run (it ended, or waits for a delay or a retry) clears the owner, so
 * a heartbeat of the process that committed it, landing after, cannot renew a lease it gave up.
 */
export function released(c: StepCommit): boolean {
  return c.next.status !== 'running' || c.next.wakeAt !== null;
}
