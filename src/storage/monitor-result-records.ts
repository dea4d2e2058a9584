import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { MonitorRunRecord, MonitorType, Page } from './monitor-records.js';

/** A field's value in the previous run and in this one (spec 2.8). */
export interface FieldChange {
  old: unknown;
  new: unknown;
}

/** Spec 2.8's snapshot: one target's result in one run, in the run's input order (`seq`). */
export interface SnapshotRecord {
  runId: string;
  seq: number;
  target: string;
  data: Record<string, unknown>;
  /** Per changed field; null when nothing changed. */
  changes: Record<string, FieldChange> | null;
  hasChanges: boolean;
}

/** A snapshot in the account-wide results, with the run and monitor it belongs to. */
export interface MonitoringSnapshot extends SnapshotRecord {
  monitorId: string;
  type: MonitorType;
}

/** A run with its monitor's type, which the account-wide lists filter on and a snapshot's key comes from. */
export interface TypedRunRecord extends MonitorRunRecord {
  type: MonitorType;
}

export interface ResultsFilter extends Page {
  changesOnly: boolean;
}

export interface MonitoringResultsFilter extends ResultsFilter {
  type?: MonitorType | undefined;
}

/**
 * Rows read per keyset page when a run's snapshots are streamed: a million-target CSV holds at most
 * this many snapshots in memory at a time, and pays one query per page, each an index seek.
 */
export const SNAPSHOT_PAGE_SIZE = 1000;

/** What both adapters select from monitor_snapshots `s` (double-quoted aliases, read by both). */
export const SNAPSHOT_COLUMNS = `s.run_id AS "runId", s.seq, s.target, s.data, s.changes, s.has_changes AS "hasChanges"`;

export interface SnapshotRow {
  runId: string;
  seq: number;
  target: string;
  data: string;
  changes: string | null;
  /** 0 or 1 on SQLite, a boolean on PostgreSQL. */
  hasChanges: number | boolean;
}

export function snapshotFromRow(row: SnapshotRow): SnapshotRecord {
  return {
    runId: row.runId,
    seq: row.seq,
    target: row.target,
    data: JSON.parse(row.data) as Record<string, unknown>,
    changes: row.changes === null ? null : (JSON.parse(row.changes) as Record<string, FieldChange>),
    hasChanges: row.hasChanges === true || row.hasChanges === 1,
  };
}

export function monitoringSnapshotFromRow(row: SnapshotRow & { monitorId: string; type: MonitorType }): MonitoringSnapshot {
  return { ...snapshotFromRow(row), monitorId: row.monitorId, type: row.type };
}

export function runNotFound(): AppError {
  return new AppError(ERROR_CODES.monitorRunNotFound, 'Run not found', { statusCode: 404 });
}

/** RUN_COLUMNS of monitor_runs `r` joined with its monitor `m`, whose type comes along. */
export const TYPED_RUN_COLUMNS = `r.id, r.monitor_id AS "monitorId", r.account_id AS "accountId", r.triggered_by AS "trigger",
  r.period_start AS "periodStart", r.status, r.job_id AS "jobId", r.total_records AS "totalRecords",
  r.changes_detected AS "changesDetected", r.credits_used AS "creditsUsed", r.started_at AS "startedAt",
  r.finished_at AS "finishedAt", r.reason, r.created_at AS "createdAt", m.type`;
