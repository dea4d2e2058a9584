import type { MonitorType, Page } from '../monitor-records.js';
import {
  monitoringSnapshotFromRow,
  runNotFound,
  SNAPSHOT_COLUMNS,
  SNAPSHOT_PAGE_SIZE,
  snapshotFromRow,
  TYPED_RUN_COLUMNS,
  type MonitoringResultsFilter,
  type MonitoringSnapshot,
  type ResultsFilter,
  type SnapshotRecord,
  type SnapshotRow,
  type TypedRunRecord,
} from '../monitor-result-records.js';
import type { MonitorResultsPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

const RUNS_FROM = 'FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id';
const OF_ACCOUNT = 'r.account_id = $1 AND ($2::text IS NULL OR m.type = $2)';
/** A literal condition, not a parameter, so that a changes-only read is planned on monitor_snapshots_changed. */
const changed = (changesOnly: boolean) => (changesOnly ? ' AND s.has_changes' : '');

/** Reads only, each statement on its own (autocommit, READ COMMITTED): nothing here locks a row. */
export class PgMonitorResults implements MonitorResultsPort {
  constructor(private readonly db: PgDatabase) {}

  async run(accountId: string, runId: string): Promise<TypedRunRecord | undefined> {
    const { rows } = await this.db.query<TypedRunRecord>(`SELECT ${TYPED_RUN_COLUMNS} ${RUNS_FROM} WHERE r.id = $1 AND r.account_id = $2`, [runId, accountId]);
    return rows[0];
  }

  async runs(accountId: string, filter: Page & { type?: MonitorType | undefined }): Promise<{ runs: TypedRunRecord[]; total: number }> {
    const type = filter.type ?? null;
    const [page, count] = await Promise.all([
      this.db.query<TypedRunRecord>(`SELECT ${TYPED_RUN_COLUMNS} ${RUNS_FROM} WHERE ${OF_ACCOUNT} ORDER BY r.created_at DESC, r.id COLLATE "C" DESC LIMIT $3 OFFSET $4`, [
        accountId,
        type,
        filter.limit,
        filter.offset,
      ]),
      this.db.query<{ n: number }>(`SELECT count(*) AS n ${RUNS_FROM} WHERE ${OF_ACCOUNT}`, [accountId, type]),
    ]);
    return { runs: page.rows, total: count.rows[0]!.n };
  }

  async snapshots(accountId: string, runId: string, filter: ResultsFilter): Promise<{ snapshots: SnapshotRecord[]; total: number }> {
    const from = `FROM monitor_snapshots s JOIN monitor_runs r ON r.id = s.run_id WHERE s.run_id = $1 AND r.account_id = $2${changed(filter.changesOnly)}`;
    const [page, count] = await Promise.all([
      this.db.query<SnapshotRow>(`SELECT ${SNAPSHOT_COLUMNS} ${from} ORDER BY s.seq LIMIT $3 OFFSET $4`, [runId, accountId, filter.limit, filter.offset]),
      this.db.query<{ n: number }>(`SELECT count(*) AS n ${from}`, [runId, accountId]),
    ]);
    return { snapshots: page.rows.map(snapshotFromRow), total: count.rows[0]!.n };
  }

  async *streamSnapshots(accountId: string, runId: string, options: { changesOnly: boolean; pageSize?: number }): AsyncIterable<SnapshotRecord[]> {
    if (!(await this.run(accountId, runId))) throw runNotFound();
    const sql = `SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots s WHERE s.run_id = $1 AND s.seq > $2${changed(options.changesOnly)} ORDER BY s.seq LIMIT $3`;
    const size = options.pageSize ?? SNAPSHOT_PAGE_SIZE;
    for (let after = Number.MIN_SAFE_INTEGER; ; ) {
      const { rows } = await this.db.query<SnapshotRow>(sql, [runId, after, size]);
      if (rows.length === 0) return;
      yield rows.map(snapshotFromRow);
      if (rows.length < size) return;
      after = rows[rows.length - 1]!.seq;
    }
  }

  async results(accountId: string, filter: MonitoringResultsFilter): Promise<{ results: MonitoringSnapshot[]; total: number }> {
    const type = filter.type ?? null;
    const from = `${RUNS_FROM} JOIN monitor_snapshots s ON s.run_id = r.id WHERE ${OF_ACCOUNT} AND r.status = 'completed'${changed(filter.changesOnly)}`;
    const [page, count] = await Promise.all([
      this.db.query<SnapshotRow & { monitorId: string; type: MonitorType }>(
        `SELECT ${SNAPSHOT_COLUMNS}, r.monitor_id AS "monitorId", m.type ${from} ORDER BY r.created_at DESC, r.id COLLATE "C" DESC, s.seq LIMIT $3 OFFSET $4`,
        [accountId, type, filter.limit, filter.offset],
      ),
      this.db.query<{ n: number }>(`SELECT count(*) AS n ${from}`, [accountId, type]),
    ]);
    return { results: page.rows.map(monitoringSnapshotFromRow), total: count.rows[0]!.n };
  }
}
