import type { Lease } from '../job-records.js';
import { claimFromRow, type ClaimedRow, type ComparisonCommit, type RunClaim, type RunEnd, type StoredSnapshot, type TargetCursor } from '../monitor-run-records.js';
import { MONITOR_COLUMNS, monitorFromRow, RUN_COLUMNS, type MonitorRow } from '../monitor-rows.js';
import type { MonitorRunsPort } from '../store.js';
import { addToOutbox } from './pg-core-outbox.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

const SNAPSHOT_COLUMNS = 'seq, target, data, changes, alert';

const STARTABLE = `SELECT r.id FROM monitor_runs r
  WHERE (r.status = 'queued' OR (r.status = 'running' AND r.job_id IS NULL AND r.lease_until <= $1))
    AND NOT EXISTS (SELECT 1 FROM monitor_runs o WHERE o.monitor_id = r.monitor_id AND o.status = 'running' AND o.id <> r.id)
  ORDER BY r.created_at, r.id COLLATE "C" LIMIT 1 FOR UPDATE OF r SKIP LOCKED`;

const COMPARABLE = `SELECT r.id FROM monitor_runs r JOIN jobs j ON j.id = r.job_id
  WHERE r.status = 'running' AND r.lease_until <= $1 AND j.status IN ('completed', 'failed', 'cancelled')
  ORDER BY r.created_at, r.id COLLATE "C" LIMIT 1 FOR UPDATE OF r SKIP LOCKED`;

/**
 * Run execution at READ COMMITTED. A claim takes its run with FOR UPDATE SKIP LOCKED, so two
 * processes share the work instead of queueing on one row; the lease check sits in the same WHERE,
 * read under the lock. Two queued runs of one monitor claimed by two processes at once could both
 * pass the "no other run running" check, each blind to the other's uncommitted move: the claim
 * re-checks it after taking its row, under a lock on the monitor's row that serialises the two.
 * Checkpoints and the end are fenced by epoch (and cursor), so a lost lease writes nothing.
 */
export class PgMonitorRuns implements MonitorRunsPort {
  constructor(private readonly db: PgDatabase) {}

  async claimStart(owner: string, now: number, leaseMs: number): Promise<RunClaim | undefined> {
    return this.claim(STARTABLE, owner, now, leaseMs, true);
  }

  async claimCompare(owner: string, now: number, leaseMs: number): Promise<RunClaim | undefined> {
    return this.claim(COMPARABLE, owner, now, leaseMs, false);
  }

  private async claim(find: string, owner: string, now: number, leaseMs: number, starting: boolean): Promise<RunClaim | undefined> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ id: string }>(find, [now]);
      const id = rows[0]?.id;
      if (id === undefined) return undefined;
      if (starting) {
        const { rows: run } = await tx.query<{ monitorId: string }>('SELECT monitor_id AS "monitorId" FROM monitor_runs WHERE id = $1', [id]);
        await tx.query('SELECT 1 FROM monitors WHERE id = $1 FOR UPDATE', [run[0]!.monitorId]);
        const { rows: busy } = await tx.query(
          "SELECT 1 FROM monitor_runs WHERE monitor_id = $1 AND status = 'running' AND id <> $2 LIMIT 1",
          [run[0]!.monitorId, id],
        );
        if (busy.length > 0) return undefined;
      }
      await tx.query(
        `UPDATE monitor_runs SET status = 'running', started_at = COALESCE(started_at, $1), lease_owner = $2, lease_epoch = lease_epoch + 1, lease_until = $3
          WHERE id = $4`,
        [now, owner, now + leaseMs, id],
      );
      return claimed(tx, id);
    });
  }

  async renewLease(runId: string, lease: Lease, until: number): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE monitor_runs SET lease_until = $1 WHERE id = $2 AND lease_owner = $3 AND lease_epoch = $4', [
      until,
      runId,
      lease.owner,
      lease.epoch,
    ]);
    return rowCount > 0;
  }

  async targetPage(monitorId: string, after: TargetCursor | null, limit: number): Promise<TargetCursor[]> {
    // In the monitor's order (issue 33), by keyset on (position, target); byte order breaks ties as SQLite does.
    const { rows } = await this.db.query<TargetCursor>(
      `SELECT target, position FROM monitor_targets WHERE monitor_id = $1 AND (position, target COLLATE "C") > ($2::int, $3::text COLLATE "C")
        ORDER BY position, target COLLATE "C" LIMIT $4`,
      [monitorId, after?.position ?? 0, after?.target ?? '', limit],
    );
    return rows;
  }

  async recordJob(runId: string, lease: Lease, jobId: string, totalRecords: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      "UPDATE monitor_runs SET job_id = $1, total_records = $2, lease_until = 0 WHERE id = $3 AND lease_owner = $4 AND lease_epoch = $5 AND status = 'running'",
      [jobId, totalRecords, runId, lease.owner, lease.epoch],
    );
    return rowCount > 0;
  }

  async lastData(monitorId: string, targets: readonly string[]): Promise<Map<string, string | null>> {
    const { rows } = await this.db.query<{ target: string; data: string | null }>(
      'SELECT target, last_data AS data FROM monitor_targets WHERE monitor_id = $1 AND target = ANY($2::text[])',
      [monitorId, targets],
    );
    return new Map(rows.map((r) => [r.target, r.data]));
  }

  async commitComparison(input: ComparisonCommit): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const { lease, snapshots } = input;
      const moved = await tx.query(
        `UPDATE monitor_runs SET compare_cursor = compare_cursor + $1, changes_detected = COALESCE(changes_detected, 0) + $2,
           alerts_detected = alerts_detected + $3, lease_until = $4
          WHERE id = $5 AND lease_owner = $6 AND lease_epoch = $7 AND compare_cursor = $8 AND status = 'running'`,
        [snapshots.length, input.changes, input.alerts, input.leaseUntil, input.runId, lease.owner, lease.epoch, input.cursor],
      );
      if (moved.rowCount === 0) return false;
      await tx.query(
        `INSERT INTO monitor_snapshots (run_id, seq, target, data, changes, has_changes, alert)
         SELECT $1, s.seq, s.target, s.data, s.changes, s.changes IS NOT NULL, s.alert
           FROM unnest($2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[]) AS s(seq, target, data, changes, alert)
         ON CONFLICT (run_id, seq) DO UPDATE SET target = excluded.target, data = excluded.data, changes = excluded.changes,
           has_changes = excluded.has_changes, alert = excluded.alert`,
        [
          input.runId,
          snapshots.map((s) => s.seq),
          snapshots.map((s) => s.target),
          snapshots.map((s) => s.data),
          snapshots.map((s) => s.changes),
          snapshots.map((s) => s.alert),
        ],
      );
      if (input.lastData.length > 0) {
        await tx.query(
          `UPDATE monitor_targets t SET last_data = v.data, last_run_id = $1
             FROM unnest($3::text[], $4::text[]) AS v(target, data)
            WHERE t.monitor_id = $2 AND t.target = v.target`,
          [input.runId, input.monitorId, input.lastData.map((t) => t.target), input.lastData.map((t) => t.data)],
        );
      }
      return true;
    });
  }

  async snapshotPage(runId: string, page: { afterSeq: number; limit: number; changedOnly: boolean }): Promise<StoredSnapshot[]> {
    const { rows } = await this.db.query<StoredSnapshot>(
      `SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots WHERE run_id = $1 AND ($2::boolean IS FALSE OR has_changes) AND seq > $3 ORDER BY seq LIMIT $4`,
      [runId, page.changedOnly, page.afterSeq, page.limit],
    );
    return rows;
  }

  async alertSnapshots(runId: string, limit: number): Promise<StoredSnapshot[]> {
    const { rows } = await this.db.query<StoredSnapshot>(
      `SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots WHERE run_id = $1 AND alert IS NOT NULL ORDER BY seq LIMIT $2`,
      [runId, limit],
    );
    return rows;
  }

  async finish(end: RunEnd): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const { lease } = end;
      const moved = await tx.query(
        `UPDATE monitor_runs SET status = $1, reason = $2, finished_at = $3, total_records = $4, credits_used = $5,
           changes_detected = COALESCE(changes_detected, 0), lease_until = 0
          WHERE id = $6 AND lease_owner = $7 AND lease_epoch = $8 AND status = 'running'`,
        [end.status, end.reason, end.now, end.totalRecords, end.creditsUsed, end.runId, lease.owner, lease.epoch],
      );
      if (moved.rowCount === 0) return false;
      for (const event of end.events) await addToOutbox(tx, event, end.now);
      return true;
    });
  }
}

async function claimed(tx: PgQueryable, id: string): Promise<RunClaim> {
  const { rows } = await tx.query<ClaimedRow>(
    `SELECT ${RUN_COLUMNS}, lease_owner AS "leaseOwner", lease_epoch AS "leaseEpoch", compare_cursor AS "compareCursor",
       alerts_detected AS "alertsDetected", (SELECT status FROM jobs WHERE jobs.id = monitor_runs.job_id) AS "jobStatus"
       FROM monitor_runs WHERE id = $1`,
    [id],
  );
  const row = rows[0]!;
  const { rows: monitors } = await tx.query<MonitorRow>(`SELECT ${MONITOR_COLUMNS} FROM monitors WHERE id = $1`, [row.monitorId]);
  return claimFromRow(row, monitorFromRow(monitors[0]!));
}
