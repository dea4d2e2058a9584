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
import type { Db } from './open-database.js';

const RUNS_FROM = 'FROM monitor_runs r JOIN monitors m ON m.id = r.monitor_id';
const OF_ACCOUNT = 'r.account_id = ? AND (? IS NULL OR m.type = ?)';
/** Each statement in two forms, so that a changes-only read walks monitor_snapshots_changed instead of filtering every row. */
const CHANGED = { all: '', changed: ' AND s.has_changes = 1' } as const;

/** Reads only: each statement sees one snapshot of the database (WAL), and none takes the writer. */
export class SqliteMonitorResults implements MonitorResultsPort {
  private readonly s;

  constructor(db: Db) {
    const perFilter = (make: (changed: string) => string) => ({ all: db.prepare(make(CHANGED.all)), changed: db.prepare(make(CHANGED.changed)) });
    this.s = {
      run: db.prepare(`SELECT ${TYPED_RUN_COLUMNS} ${RUNS_FROM} WHERE r.id = ? AND r.account_id = ?`),
      runs: db.prepare(`SELECT ${TYPED_RUN_COLUMNS} ${RUNS_FROM} WHERE ${OF_ACCOUNT} ORDER BY r.created_at DESC, r.id DESC LIMIT ? OFFSET ?`),
      countRuns: db.prepare(`SELECT count(*) AS n ${RUNS_FROM} WHERE ${OF_ACCOUNT}`),
      page: perFilter(
        (c) =>
          `SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots s JOIN monitor_runs r ON r.id = s.run_id
           WHERE s.run_id = ? AND r.account_id = ?${c} ORDER BY s.seq LIMIT ? OFFSET ?`,
      ),
      count: perFilter((c) => `SELECT count(*) AS n FROM monitor_snapshots s JOIN monitor_runs r ON r.id = s.run_id WHERE s.run_id = ? AND r.account_id = ?${c}`),
      after: perFilter((c) => `SELECT ${SNAPSHOT_COLUMNS} FROM monitor_snapshots s WHERE s.run_id = ? AND s.seq > ?${c} ORDER BY s.seq LIMIT ?`),
      results: perFilter(
        (c) =>
          `SELECT ${SNAPSHOT_COLUMNS}, r.monitor_id AS "monitorId", m.type ${RUNS_FROM} JOIN monitor_snapshots s ON s.run_id = r.id
           WHERE ${OF_ACCOUNT} AND r.status = 'completed'${c} ORDER BY r.created_at DESC, r.id DESC, s.seq LIMIT ? OFFSET ?`,
      ),
      countResults: perFilter(
        (c) => `SELECT count(*) AS n ${RUNS_FROM} JOIN monitor_snapshots s ON s.run_id = r.id WHERE ${OF_ACCOUNT} AND r.status = 'completed'${c}`,
      ),
    };
  }

  async run(accountId: string, runId: string): Promise<TypedRunRecord | undefined> {
    return this.s.run.get(runId, accountId) as TypedRunRecord | undefined;
  }

  async runs(accountId: string, filter: Page & { type?: MonitorType | undefined }): Promise<{ runs: TypedRunRecord[]; total: number }> {
    const type = filter.type ?? null;
    const runs = this.s.runs.all(accountId, type, type, filter.limit, filter.offset) as TypedRunRecord[];
    const { n } = this.s.countRuns.get(accountId, type, type) as { n: number };
    return { runs, total: n };
  }

  async snapshots(accountId: string, runId: string, filter: ResultsFilter): Promise<{ snapshots: SnapshotRecord[]; total: number }> {
    const which = filter.changesOnly ? 'changed' : 'all';
    const rows = this.s.page[which].all(runId, accountId, filter.limit, filter.offset) as SnapshotRow[];
    const { n } = this.s.count[which].get(runId, accountId) as { n: number };
    return { snapshots: rows.map(snapshotFromRow), total: n };
  }

  async *streamSnapshots(accountId: string, runId: string, options: { changesOnly: boolean; pageSize?: number }): AsyncIterable<SnapshotRecord[]> {
    if (!this.s.run.get(runId, accountId)) throw runNotFound();
    const statement = this.s.after[options.changesOnly ? 'changed' : 'all'];
    const size = options.pageSize ?? SNAPSHOT_PAGE_SIZE;
    for (let after = Number.MIN_SAFE_INTEGER; ; ) {
      const rows = statement.all(runId, after, size) as SnapshotRow[];
      if (rows.length === 0) return;
      yield rows.map(snapshotFromRow);
      if (rows.length < size) return;
      after = rows[rows.length - 1]!.seq;
    }
  }

  async results(accountId: string, filter: MonitoringResultsFilter): Promise<{ results: MonitoringSnapshot[]; total: number }> {
    const which = filter.changesOnly ? 'changed' : 'all';
    const type = filter.type ?? null;
    const rows = this.s.results[which].all(accountId, type, type, filter.limit, filter.offset) as (SnapshotRow & { monitorId: string; type: MonitorType })[];
    const { n } = this.s.countResults[which].get(accountId, type, type) as { n: number };
    return { results: rows.map(monitoringSnapshotFromRow), total: n };
  }
}
