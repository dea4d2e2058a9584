import type { Lease } from '../job-records.js';
import { claimFromRow, type ClaimedRow, type ComparisonCommit, type RunClaim, type RunEnd, type StoredSnapshot, type TargetCursor } from '../monitor-run-records.js';
import { MONITOR_COLUMNS, monitorFromRow, RUN_COLUMNS, type MonitorRow } from '../monitor-rows.js';
import type { MonitorRunsPort } from '../store.js';
import type { Db } from './open-database.js';
import type { SqliteOutbox } from './sqlite-outbox.js';

const SNAPSHOT_COLUMNS = 'seq, target, data, changes, alert';

/**
 * Run execution on SQLite. Claims and checkpoints are IMMEDIATE transactions: the single writer
 * serialises two processes' claims, and the epoch in every later WHERE fences a process that lost
 * its lease.
 */
export class SqliteMonitorRuns implements MonitorRunsPort {
  private readonly s;

  constructor(
    private readonly db: Db,
    private readonly outbox: SqliteOutbox,
  ) {
    this.s = {
      startable: db.prepare(
        `SELECT r.id FROM monitor_runs r
          WHERE (r.status = 'queued' OR (r.status = 'running' AND r.job_id IS NULL AND r.lease_until <= ?))
            AND NOT EXISTS (SELECT 1 FROM monitor_runs o WHERE o.monitor_id = r.monitor_id AND o.status = 'running' AND o.id <> r.id)
          ORDER BY r.created_at, r.id LIMIT 1`,
      ),
      comparable: db.prepare(
        `SELECT r.id FROM monitor_runs r JOIN jobs j ON j.id = r.job_id
          WHERE r.status = 'running' AND r.lease_until <= ? AND j.status IN ('completed', 'failed', 'cancelled')
          ORDER BY r.created_at, r.id LIMIT 1`,
      ),
      take: db.prepare(
        `UPDATE monitor_runs SET status = 'running', started_at = COALESCE(started_at, ?), lease_owner = ?, lease_epoch = lease_epoch + 1, lease_until = ?
          WHERE id = ?`,
      ),
      claimed: db.prepare(
        `SELECT ${RUN_COLUMNS}, lease_owner AS leaseOwner, lease_epoch AS leaseEpoch, compare_cursor AS compareCursor, alerts_detected AS alertsDetected,
           (SELECT status FROM jobs WHERE jobs.id = monitor_runs.job_id) AS jobStatus
           FROM monitor_runs WHERE id = ?`,
      ),
      monitor: db.prepare(`SELECT ${MONITOR_COLUMNS} FROM monitors WHERE id = ?`),
      renew: db.prepare('UPDATE monitor_runs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND lease_epoch = ?'),
      // In the monitor's order (issue 33), by keyset on (position, target): removing a target between pages skips nothing.
      targets: db.prepare(
        'SELECT target, position FROM monitor_targets WHERE monitor_id = ? AND (position, target) > (?, ?) ORDER BY position, target LIMIT ?',
      ),
      recordJob: db.prepare(
        "UPDATE monitor_runs SET job_id = ?, total_records = ?, lease_until = 0 WHERE id = ? AND lease_owner = ? AND lease_epoch = ? AND status = 'running'",
      ),
      lastData: db.prepare('SELECT target, last_data AS data FROM monitor_targets WHERE monitor_id = ? AND target IN (SELECT value FROM json_each(?))'),
      upsertSnapshot: db.prepare(
        `INSERT INTO monitor_snapshots (run_id, seq, target, data, changes, has_changes, alert) VALUES (?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id, seq) DO UPDATE SET target = excluded.target, data = excluded.data, changes = excluded.changes,
           has_changes = excluded.has_changes, alert = excluded.alert`,
      ),
      setLast: db.prepare('UPDATE monitor_targets SET last_data = ?, last_run_id = ? WHERE monitor_id = ? AND target = ?'),
      advance: db.prepare(
        `UPDATE monitor_runs SET compare_cursor = compare_cursor + ?, changes_detected = COALESCE(changes_detected, 0) + ?,
           alerts_detected = alerts_detected + ?, lease_until = ?
          WHERE id = ? AND lease_owner = ? AND lease_epoch = ? AND compare_cursor = ? AND status = 'running'`,
      ),
      changed: db.prepare(`SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots WHERE run_id = ? AND has_changes = 1 AND seq > ? ORDER BY seq LIMIT ?`),
      snapshots: db.prepare(`SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots WHERE run_id = ? AND seq > ? ORDER BY seq LIMIT ?`),
      alerts: db.prepare(`SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots WHERE run_id = ? AND alert IS NOT NULL ORDER BY seq LIMIT ?`),
      finish: db.prepare(
        `UPDATE monitor_runs SET status = ?, reason = ?, finished_at = ?, total_records = ?, credits_used = ?,
           changes_detected = COALESCE(changes_detected, 0), lease_until = 0
          WHERE id = ? AND lease_owner = ? AND lease_epoch = ? AND status = 'running'`,
      ),
    };
  }

  async claimStart(owner: string, now: number, leaseMs: number): Promise<RunClaim | undefined> {
    return this.claim(this.s.startable, owner, now, leaseMs);
  }

  async claimCompare(owner: string, now: number, leaseMs: number): Promise<RunClaim | undefined> {
    return this.claim(this.s.comparable, owner, now, leaseMs);
  }

  private claim(find: typeof this.s.startable, owner: string, now: number, leaseMs: number): RunClaim | undefined {
    return this.db
      .transaction(() => {
        const found = find.get(now) as { id: string } | undefined;
        if (!found) return undefined;
        this.s.take.run(now, owner, now + leaseMs, found.id);
        const row = this.s.claimed.get(found.id) as ClaimedRow;
        const monitor = monitorFromRow(this.s.monitor.get(row.monitorId) as MonitorRow);
        return claimFromRow(row, monitor);
      })
      .immediate();
  }

  async renewLease(runId: string, lease: Lease, until: number): Promise<boolean> {
    return this.s.renew.run(until, runId, lease.owner, lease.epoch).changes > 0;
  }

  async targetPage(monitorId: string, after: TargetCursor | null, limit: number): Promise<TargetCursor[]> {
    // (0, '') sorts before every stored target: positions start at 1 and targets are never empty.
    return this.s.targets.all(monitorId, after?.position ?? 0, after?.target ?? '', limit) as TargetCursor[];
  }

  async recordJob(runId: string, lease: Lease, jobId: string, totalRecords: number): Promise<boolean> {
    return this.s.recordJob.run(jobId, totalRecords, runId, lease.owner, lease.epoch).changes > 0;
  }

  async lastData(monitorId: string, targets: readonly string[]): Promise<Map<string, string | null>> {
    const rows = this.s.lastData.all(monitorId, JSON.stringify(targets)) as { target: string; data: string | null }[];
    return new Map(rows.map((r) => [r.target, r.data]));
  }

  async commitComparison(input: ComparisonCommit): Promise<boolean> {
    return this.db
      .transaction(() => {
        const { lease } = input;
        const moved = this.s.advance.run(input.snapshots.length, input.changes, input.alerts, input.leaseUntil, input.runId, lease.owner, lease.epoch, input.cursor);
        if (moved.changes === 0) return false;
        for (const s of input.snapshots) this.s.upsertSnapshot.run(input.runId, s.seq, s.target, s.data, s.changes, s.changes === null ? 0 : 1, s.alert);
        for (const t of input.lastData) this.s.setLast.run(t.data, input.runId, input.monitorId, t.target);
        return true;
      })
      .immediate();
  }

  async snapshotPage(runId: string, page: { afterSeq: number; limit: number; changedOnly: boolean }): Promise<StoredSnapshot[]> {
    return (page.changedOnly ? this.s.changed : this.s.snapshots).all(runId, page.afterSeq, page.limit) as StoredSnapshot[];
  }

  async alertSnapshots(runId: string, limit: number): Promise<StoredSnapshot[]> {
    return this.s.alerts.all(runId, limit) as StoredSnapshot[];
  }

  async finish(end: RunEnd): Promise<boolean> {
    return this.db
      .transaction(() => {
        const { lease } = end;
        const moved = this.s.finish.run(end.status, end.reason, end.now, end.totalRecords, end.creditsUsed, end.runId, lease.owner, lease.epoch);
        if (moved.changes === 0) return false;
        for (const event of end.events) this.outbox.add(event, end.now);
        return true;
      })
      .immediate();
  }
}
