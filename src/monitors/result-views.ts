import type { MonitorType } from '../storage/monitor-records.js';
import type { MonitoringSnapshot, SnapshotRecord, TypedRunRecord } from '../storage/monitor-result-records.js';
import { runView } from './monitor-views.js';
import { MONITOR_TYPE_SPECS } from './monitor-types.js';

/**
 * Spec 2.8's snapshot: the target under its type's key (`email`, `phone`, `company`) and under
 * `target`, the run's `data`, `changes` (`{field: {old, new}}` or null) and `has_changes`.
 */
export function snapshotView(type: MonitorType, s: SnapshotRecord) {
  return { [MONITOR_TYPE_SPECS[type].key]: s.target, target: s.target, data: s.data, changes: s.changes, has_changes: s.hasChanges };
}

/** A snapshot in the account-wide results: which run and monitor it came from, and their type. */
export function monitoringSnapshotView(s: MonitoringSnapshot) {
  return { run_id: s.runId, monitor_id: s.monitorId, type: s.type, ...snapshotView(s.type, s) };
}

/** A run in the account-wide list: the run as everywhere, and its monitor's type. */
export function typedRunView(r: TypedRunRecord) {
  return { ...runView(r), type: r.type };
}

/** A run's snapshots as the bare JSON array of spec 4.8, one page of the store at a time. */
export async function* snapshotJsonArray(type: MonitorType, pages: AsyncIterable<SnapshotRecord[]>): AsyncIterable<string> {
  let first = true;
  yield '[';
  for await (const page of pages) {
    let text = '';
    for (const s of page) {
      text += (first ? '' : ',') + JSON.stringify(snapshotView(type, s));
      first = false;
    }
    yield text;
  }
  yield ']';
}
