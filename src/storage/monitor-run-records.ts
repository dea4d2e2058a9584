import type { Lease } from './job-records.js';
import type { MonitorRecord, MonitorRunRecord, RunStatus } from './monitor-records.js';
import type { OutboxEvent } from './records.js';

/** A leased step of a run (starting it, or comparing its results), with the monitor it belongs to. */
export interface RunClaim {
  run: MonitorRunRecord;
  monitor: MonitorRecord;
  lease: Lease;
  /** Result rows compared and committed so far (0 until the comparison starts). */
  compareCursor: number;
  /** High-value alerts found so far. */
  alertsDetected: number;
  /** The status of the run's job, read with the claim; null while the run has no job. */
  jobStatus: string | null;
}

/** One target's snapshot (spec 2.8) as a comparison batch writes it. */
export interface SnapshotWrite {
  /** The row's place in the run's input, from 0: the order results are read in. */
  seq: number;
  target: string;
  /** JSON text of the profile (or the error marker). */
  data: string;
  /** JSON text of `{field: {old, new}}`, or null when unchanged or not compared. */
  changes: string | null;
  /** JSON text of the target's high-value alert, or null. */
  alert: string | null;
}

/** One comparison checkpoint: snapshots, the targets' new last results, the cursor and counts. */
export interface ComparisonCommit {
  runId: string;
  monitorId: string;
  lease: Lease;
  /** The cursor the batch started from; the commit is refused if it moved. */
  cursor: number;
  snapshots: readonly SnapshotWrite[];
  /** Targets looked up successfully, with their profile as JSON text: what the next run compares with. */
  lastData: readonly { target: string; data: string }[];
  changes: number;
  alerts: number;
  /** The lease's new expiry: a comparison that commits is alive. */
  leaseUntil: number;
}

/** How a run ends; `events` go into the outbox in the same transaction. */
export interface RunEnd {
  runId: string;
  lease: Lease;
  status: Extract<RunStatus, 'completed' | 'failed' | 'cancelled'>;
  reason: string | null;
  totalRecords: number;
  creditsUsed: number;
  events: readonly OutboxEvent[];
  now: number;
}

/** A changed snapshot, as the changes file and the alert event read them back. */
/** A monitor target and its place in the monitor's order: a page of targets and the cursor after it (issue 33). */
export interface TargetCursor {
  target: string;
  position: number;
}

export interface StoredSnapshot {
  seq: number;
  target: string;
  data: string;
  changes: string | null;
  alert: string | null;
}

/** A claimed run's row as both adapters select it: the run's columns, its lease, cursor, counts and job status. */
export type ClaimedRow = MonitorRunRecord & { leaseOwner: string; leaseEpoch: number; compareCursor: number; alertsDetected: number; jobStatus: string | null };

export function claimFromRow(row: ClaimedRow, monitor: MonitorRecord): RunClaim {
  const { leaseOwner, leaseEpoch, compareCursor, alertsDetected, jobStatus, ...run } = row;
  return { run, monitor, lease: { owner: leaseOwner, epoch: Number(leaseEpoch) }, compareCursor: Number(compareCursor), alertsDetected: Number(alertsDetected), jobStatus };
}
