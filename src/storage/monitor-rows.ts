import { AppError, ERROR_CODES } from '../shared/errors.js';
import {
  LIST_STATUSES,
  MAX_TARGETS,
  type MonitorRecord,
  type MonitorType,
  type TargetListRecord,
} from './monitor-records.js';

/**
 * What both adapters select and how a row becomes a record: the aliases are double-quoted, which
 * SQLite and PostgreSQL both read, so the two adapters cannot drift apart in what they return.
 */
export const LIST_COLUMNS = `id, account_id AS "accountId", name, type, status, target_count AS "targetCount",
  invalid_count AS "invalidCount", duplicate_count AS "duplicateCount", invalid_by_code AS "invalidByCode",
  source_key AS "sourceKey", created_at AS "createdAt"`;

export const MONITOR_COLUMNS = `id, account_id AS "accountId", name, type, frequency, tracked_fields AS "trackedFields",
  change_detection AS "changeDetection", status, schedule_anchor AS "scheduleAnchor", next_run_at AS "nextRunAt",
  last_run_at AS "lastRunAt", target_count AS "targetCount", created_at AS "createdAt", updated_at AS "updatedAt"`;

export const RUN_COLUMNS = `id, monitor_id AS "monitorId", account_id AS "accountId", triggered_by AS "trigger",
  period_start AS "periodStart", status, job_id AS "jobId", total_records AS "totalRecords",
  changes_detected AS "changesDetected", credits_used AS "creditsUsed", started_at AS "startedAt",
  finished_at AS "finishedAt", reason, created_at AS "createdAt"`;

export type ListRow = Omit<TargetListRecord, 'invalidByCode'> & { invalidByCode: string };
export type MonitorRow = Omit<MonitorRecord, 'trackedFields'> & { trackedFields: string };

export function listFromRow(row: ListRow): TargetListRecord {
  return { ...row, invalidByCode: JSON.parse(row.invalidByCode) as Record<string, number> };
}

export function monitorFromRow(row: MonitorRow): MonitorRecord {
  return { ...row, trackedFields: JSON.parse(row.trackedFields) as string[] };
}

export function monitorNotFound(): AppError {
  return new AppError(ERROR_CODES.monitorNotFound, 'Monitor not found', { statusCode: 404 });
}

export function listNotFound(): AppError {
  return new AppError(ERROR_CODES.listNotFound, 'List not found', { statusCode: 404 });
}

/** Refuses a count past MAX_TARGETS; thrown inside the write's transaction, so nothing of it stays. */
export function requireWithinTargetLimit(count: number): void {
  if (count > MAX_TARGETS) {
    throw new AppError(ERROR_CODES.tooManyTargets, `a list or monitor holds at most ${MAX_TARGETS} targets; this would make ${count}`, {
      statusCode: 413,
      details: { max: MAX_TARGETS, count },
    });
  }
}

/** A list may seed a monitor when it is the account's, finished importing, and of the monitor's type. */
export function requireSeedList(list: TargetListRecord | undefined, type: MonitorType): TargetListRecord {
  if (!list) throw listNotFound();
  if (list.status !== LIST_STATUSES.ready) {
    throw new AppError(ERROR_CODES.invalidState, `list ${list.id} is still importing`, { statusCode: 409 });
  }
  if (list.type !== type) {
    throw new AppError(ERROR_CODES.invalidRequest, `list ${list.id} holds ${list.type} targets; this monitor is of type ${type}`, { statusCode: 422 });
  }
  return list;
}

export function pausedMonitor(id: string): AppError {
  return new AppError(ERROR_CODES.invalidState, `monitor ${id} is paused; resume it to run it`, { statusCode: 409 });
}

export function runInProgress(monitorId: string, runId: string): AppError {
  return new AppError(ERROR_CODES.runInProgress, `monitor ${monitorId} has run ${runId} queued or running`, { statusCode: 409, details: { run_id: runId } });
}
