import { MONITOR_STATUSES, type MonitoringTarget, type MonitorRecord, type MonitorRunRecord, type TargetListRecord } from '../storage/monitor-records.js';
import { MAX_CREDITS_PER_TARGET_PER_RUN, MONITOR_TYPE_SPECS } from './monitor-types.js';
import type { InvalidTargets } from './target-input.js';

/** How a run is billed, as the create response and docs/guides/monitors.md state it. */
export const RUN_BILLING = `as a bulk job of the monitor's type: ${MAX_CREDITS_PER_TARGET_PER_RUN} credit per target the account has not paid for within the charge window; a target already paid for in the window (by a run, a job or a lookup) is free; never charged twice in one run, resumed or not`;

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** A monitor as the API and `--json` show it (snake_case, spec style). A paused monitor has no next run. */
export function monitorView(m: MonitorRecord) {
  return {
    id: m.id,
    name: m.name,
    type: m.type,
    frequency: m.frequency,
    tracked_fields: m.trackedFields,
    change_detection: m.changeDetection,
    status: m.status,
    target_count: m.targetCount,
    credits_per_run: m.targetCount * MAX_CREDITS_PER_TARGET_PER_RUN,
    next_run_at: m.status === MONITOR_STATUSES.paused ? null : iso(m.nextRunAt),
    last_run_at: iso(m.lastRunAt),
    created_at: iso(m.createdAt)!,
    updated_at: iso(m.updatedAt)!,
  };
}

/** A run: spec 2.8's stats under `stats`, duration in milliseconds once it has ended. */
export function runView(r: MonitorRunRecord) {
  return {
    id: r.id,
    monitor_id: r.monitorId,
    status: r.status,
    trigger: r.trigger,
    period_start: iso(r.periodStart),
    job_id: r.jobId,
    created_at: iso(r.createdAt)!,
    started_at: iso(r.startedAt),
    finished_at: iso(r.finishedAt),
    stats: {
      total_records: r.totalRecords,
      changes_detected: r.changesDetected,
      credits_used: r.creditsUsed,
      duration_ms: r.startedAt !== null && r.finishedAt !== null ? r.finishedAt - r.startedAt : null,
    },
  };
}

export function listView(l: TargetListRecord) {
  return {
    id: l.id,
    name: l.name,
    type: l.type,
    status: l.status,
    target_count: l.targetCount,
    invalid_count: l.invalidCount,
    duplicate_count: l.duplicateCount,
    invalid_by_code: l.invalidByCode,
    created_at: iso(l.createdAt)!,
  };
}

export function invalidView(invalid: InvalidTargets) {
  return { count: invalid.count, by_code: invalid.byCode, examples: invalid.examples };
}

/** A watched target under its type's key (`email`, `phone`, `company`) and under `target`, as a snapshot names it. */
export function monitoringTargetView(t: MonitoringTarget) {
  return { [MONITOR_TYPE_SPECS[t.type].key]: t.target, target: t.target, type: t.type, monitor_ids: t.monitorIds, added_at: iso(t.addedAt)! };
}
