import { randomUUID } from 'node:crypto';
import {
  MONITOR_STATUSES,
  RUN_CANCEL_REASONS,
  RUN_TRIGGERS,
  type MonitorChanges,
  type MonitorRecord,
  type MonitorRunRecord,
  type MonitoringTarget,
  type MonitorStatus,
  type MonitorTarget,
  type MonitorType,
  type NewMonitor,
  type Page,
  type TargetListRecord,
} from '../monitor-records.js';
import {
  LIST_COLUMNS,
  listFromRow,
  listNotFound,
  MONITOR_COLUMNS,
  monitorFromRow,
  monitorNotFound,
  pausedMonitor,
  requireSeedList,
  requireWithinTargetLimit,
  RUN_COLUMNS,
  runInProgress,
  type ListRow,
  type MonitorRow,
} from '../monitor-rows.js';
import { nextPeriodAfter, periodAtOrBefore } from '../monitor-schedule.js';
import type { MonitorsPort } from '../store.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

/**
 * Lists, monitors and the schedule at READ COMMITTED. A write that checks before it changes (a
 * count cap, a run already queued, a paused monitor) first locks the row it checks with
 * `SELECT ... FOR UPDATE`, so a concurrent writer of the same monitor or list waits and then reads
 * the committed result.
 */
export class PgMonitors implements MonitorsPort {
  constructor(private readonly db: PgDatabase) {}

  async createList(input: { id: string; accountId: string; name: string; type: MonitorType; sourceKey: string | null; now: number }): Promise<TargetListRecord> {
    const { rows } = await this.db.query<ListRow>(
      `INSERT INTO target_lists (id, account_id, name, type, status, source_key, created_at) VALUES ($1, $2, $3, $4, 'importing', $5, $6)
       RETURNING ${LIST_COLUMNS}`,
      [input.id, input.accountId, input.name, input.type, input.sourceKey, input.now],
    );
    return listFromRow(rows[0]!);
  }

  async addListTargets(listId: string, targets: readonly string[]): Promise<number> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ n: number }>('SELECT target_count AS n FROM target_lists WHERE id = $1 FOR UPDATE', [listId]);
      if (!rows[0]) throw listNotFound();
      const { rowCount: added } = await tx.query(
        // After the list's last, in the order given (issue 33); the list row's lock above serialises batches.
        `INSERT INTO list_targets (list_id, target, position)
         SELECT $1, u.t, (SELECT COALESCE(max(position), 0) FROM list_targets WHERE list_id = $1) + u.n
           FROM unnest($2::text[]) WITH ORDINALITY AS u(t, n) ORDER BY u.n ON CONFLICT DO NOTHING`,
        [listId, targets],
      );
      requireWithinTargetLimit(rows[0].n + added);
      await tx.query('UPDATE target_lists SET target_count = target_count + $1 WHERE id = $2', [added, listId]);
      return added;
    });
  }

  async finishList(listId: string, counts: { invalidCount: number; duplicateCount: number; invalidByCode: Record<string, number> }): Promise<TargetListRecord> {
    const { rows } = await this.db.query<ListRow>(
      `UPDATE target_lists SET status = 'ready', invalid_count = $1, duplicate_count = $2, invalid_by_code = $3 WHERE id = $4 RETURNING ${LIST_COLUMNS}`,
      [counts.invalidCount, counts.duplicateCount, JSON.stringify(counts.invalidByCode), listId],
    );
    if (!rows[0]) throw listNotFound();
    return listFromRow(rows[0]);
  }

  async getList(accountId: string, id: string): Promise<TargetListRecord | undefined> {
    return listRow(this.db, accountId, id);
  }

  async listTargets(accountId: string, listId: string, page: Page): Promise<{ targets: string[]; total: number }> {
    const list = await listRow(this.db, accountId, listId);
    if (!list) throw listNotFound();
    const { rows } = await this.db.query<{ target: string }>(
      'SELECT target FROM list_targets WHERE list_id = $1 ORDER BY position, target COLLATE "C" LIMIT $2 OFFSET $3',
      [list.id, page.limit, page.offset],
    );
    return { targets: rows.map((r) => r.target), total: list.targetCount };
  }

  async lists(accountId: string, type?: MonitorType): Promise<TargetListRecord[]> {
    const { rows } = await this.db.query<ListRow>(
      `SELECT ${LIST_COLUMNS} FROM target_lists WHERE account_id = $1 AND ($2::text IS NULL OR type = $2) ORDER BY created_at DESC, id COLLATE "C" DESC`,
      [accountId, type ?? null],
    );
    return rows.map(listFromRow);
  }

  async removeList(accountId: string, id: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM target_lists WHERE id = $1 AND account_id = $2', [id, accountId])).rowCount > 0;
  }

  async create(monitor: NewMonitor, seed: { listId?: string | undefined; targets?: readonly string[] | undefined } = {}): Promise<MonitorRecord> {
    return this.db.transaction(async (tx) => {
      const list = seed.listId === undefined ? undefined : requireSeedList(await listRow(tx, monitor.accountId, seed.listId, true), monitor.type);
      await tx.query(
        `INSERT INTO monitors (id, account_id, name, type, frequency, tracked_fields, change_detection, status, schedule_anchor,
           next_run_at, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $8, $9, $9)`,
        [monitor.id, monitor.accountId, monitor.name, monitor.type, monitor.frequency, JSON.stringify(monitor.trackedFields), monitor.changeDetection, monitor.startAt, monitor.now],
      );
      let added = list ? await copyList(tx, monitor.id, list.id, monitor.now) : 0;
      added += await insertTargets(tx, monitor.id, seed.targets ?? [], monitor.now);
      requireWithinTargetLimit(added);
      await tx.query('UPDATE monitors SET target_count = $1 WHERE id = $2', [added, monitor.id]);
      return (await monitorRow(tx, monitor.accountId, monitor.id))!;
    });
  }

  async get(accountId: string, id: string): Promise<MonitorRecord | undefined> {
    return monitorRow(this.db, accountId, id);
  }

  async list(accountId: string, filter: Page & { type?: MonitorType | undefined; status?: MonitorStatus | undefined }): Promise<{ monitors: MonitorRecord[]; total: number }> {
    const where = 'account_id = $1 AND ($2::text IS NULL OR type = $2) AND ($3::text IS NULL OR status = $3)';
    const params = [accountId, filter.type ?? null, filter.status ?? null];
    const [page, count] = await Promise.all([
      this.db.query<MonitorRow>(`SELECT ${MONITOR_COLUMNS} FROM monitors WHERE ${where} ORDER BY created_at, id COLLATE "C" LIMIT $4 OFFSET $5`, [
        ...params,
        filter.limit,
        filter.offset,
      ]),
      this.db.query<{ n: number }>(`SELECT count(*) AS n FROM monitors WHERE ${where}`, params),
    ]);
    return { monitors: page.rows.map(monitorFromRow), total: count.rows[0]!.n };
  }

  async update(accountId: string, id: string, changes: MonitorChanges, now: number): Promise<MonitorRecord | undefined> {
    return this.db.transaction(async (tx) => {
      const m = await monitorRow(tx, accountId, id, true);
      if (!m) return undefined;
      const frequency = changes.frequency ?? m.frequency;
      const anchor = frequency === m.frequency ? m.scheduleAnchor : m.nextRunAt;
      await tx.query(
        `UPDATE monitors SET name = $1, frequency = $2, tracked_fields = $3, change_detection = $4, schedule_anchor = $5, updated_at = $6
         WHERE id = $7 AND account_id = $8`,
        [changes.name ?? m.name, frequency, JSON.stringify(changes.trackedFields ?? m.trackedFields), changes.changeDetection ?? m.changeDetection, anchor, now, id, accountId],
      );
      return monitorRow(tx, accountId, id);
    });
  }

  async pause(accountId: string, id: string, now: number): Promise<MonitorRecord | undefined> {
    return this.db.transaction(async (tx) => {
      await tx.query("UPDATE monitors SET status = 'paused', updated_at = $1 WHERE id = $2 AND account_id = $3 AND status = 'active'", [now, id, accountId]);
      // A starter that has taken a queued run holds it as running: only runs still queued go.
      await tx.query(
        "UPDATE monitor_runs SET status = 'cancelled', reason = $4, finished_at = $1 WHERE monitor_id = $2 AND account_id = $3 AND status = 'queued'",
        [now, id, accountId, RUN_CANCEL_REASONS.monitorPaused],
      );
      return monitorRow(tx, accountId, id);
    });
  }

  async resume(accountId: string, id: string, now: number): Promise<MonitorRecord | undefined> {
    return this.db.transaction(async (tx) => {
      const m = await monitorRow(tx, accountId, id, true);
      if (!m || m.status === MONITOR_STATUSES.active) return m;
      const next = m.nextRunAt > now ? m.nextRunAt : nextPeriodAfter(m.scheduleAnchor, m.frequency, now);
      await tx.query("UPDATE monitors SET status = 'active', next_run_at = $1, updated_at = $2 WHERE id = $3", [next, now, id]);
      return monitorRow(tx, accountId, id);
    });
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    return (await this.db.query('DELETE FROM monitors WHERE id = $1 AND account_id = $2', [id, accountId])).rowCount > 0;
  }

  async addTargets(accountId: string, monitorId: string, targets: readonly string[], now: number): Promise<{ added: number; present: number }> {
    return this.db.transaction(async (tx) => {
      const m = await requireMonitor(tx, accountId, monitorId);
      const added = await insertTargets(tx, monitorId, targets, now);
      requireWithinTargetLimit(m.targetCount + added);
      await tx.query('UPDATE monitors SET target_count = target_count + $1, updated_at = $2 WHERE id = $3', [added, now, monitorId]);
      return { added, present: targets.length - added };
    });
  }

  async addListTargetsToMonitor(accountId: string, monitorId: string, listId: string, now: number): Promise<{ added: number; present: number }> {
    return this.db.transaction(async (tx) => {
      const m = await requireMonitor(tx, accountId, monitorId);
      const list = requireSeedList(await listRow(tx, accountId, listId, true), m.type);
      const added = await copyList(tx, monitorId, list.id, now);
      requireWithinTargetLimit(m.targetCount + added);
      await tx.query('UPDATE monitors SET target_count = target_count + $1, updated_at = $2 WHERE id = $3', [added, now, monitorId]);
      return { added, present: list.targetCount - added };
    });
  }

  async removeTargets(accountId: string, monitorId: string, targets: readonly string[]): Promise<number> {
    return this.db.transaction(async (tx) => {
      await requireMonitor(tx, accountId, monitorId);
      const { rowCount } = await tx.query('DELETE FROM monitor_targets WHERE monitor_id = $1 AND target = ANY($2::text[])', [monitorId, targets]);
      await tx.query('UPDATE monitors SET target_count = target_count - $1 WHERE id = $2', [rowCount, monitorId]);
      return rowCount;
    });
  }

  async targets(accountId: string, monitorId: string, page: Page): Promise<{ targets: MonitorTarget[]; total: number }> {
    const m = await requireMonitor(this.db, accountId, monitorId, false);
    const { rows } = await this.db.query<MonitorTarget>(
      'SELECT target, added_at AS "addedAt" FROM monitor_targets WHERE monitor_id = $1 ORDER BY position, target COLLATE "C" LIMIT $2 OFFSET $3',
      [monitorId, page.limit, page.offset],
    );
    return { targets: rows, total: m.targetCount };
  }

  async monitoringTargets(accountId: string, filter: Page & { type?: MonitorType | undefined }): Promise<{ targets: MonitoringTarget[]; total: number }> {
    const from = 'FROM monitor_targets t JOIN monitors m ON m.id = t.monitor_id WHERE m.account_id = $1 AND ($2::text IS NULL OR m.type = $2) GROUP BY m.type, t.target';
    const params = [accountId, filter.type ?? null];
    // One after the other: a heavy read holds one pooled connection, not two (issue 27, finding 2),
    // or two of them in flight for one account took a whole pool of four from every other account.
    const page = await this.db.query<Omit<MonitoringTarget, 'monitorIds'> & { monitorIds: string }>(
      `SELECT m.type AS type, t.target AS target, string_agg(m.id, ',') AS "monitorIds", min(t.added_at) AS "addedAt" ${from}
       ORDER BY m.type, t.target COLLATE "C" LIMIT $3 OFFSET $4`,
      [...params, filter.limit, filter.offset],
    );
    const count = await this.db.query<{ n: number }>(`SELECT count(*) AS n FROM (SELECT 1 ${from}) AS watched`, params);
    return { targets: page.rows.map((r) => ({ ...r, monitorIds: r.monitorIds.split(',').sort() })), total: count.rows[0]!.n };
  }

  async claimDueRuns(now: number, limit: number): Promise<MonitorRunRecord[]> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<MonitorRow>(
        `SELECT ${MONITOR_COLUMNS} FROM monitors WHERE status = 'active' AND next_run_at <= $1 ORDER BY next_run_at, id COLLATE "C" LIMIT $2 FOR UPDATE SKIP LOCKED`,
        [now, limit],
      );
      const made: MonitorRunRecord[] = [];
      for (const m of rows.map(monitorFromRow)) {
        const next = nextPeriodAfter(m.scheduleAnchor, m.frequency, now);
        const moved = await tx.query("UPDATE monitors SET next_run_at = $1, last_run_at = $2 WHERE id = $3 AND status = 'active' AND next_run_at = $4", [
          next,
          now,
          m.id,
          m.nextRunAt,
        ]);
        if (moved.rowCount === 0) continue;
        const period = periodAtOrBefore(m.scheduleAnchor, m.frequency, now);
        const run = await insertRun(tx, randomUUID(), m, RUN_TRIGGERS.schedule, period, now);
        if (run) made.push(run);
      }
      return made;
    });
  }

  async queueManualRun(accountId: string, monitorId: string, runId: string, now: number): Promise<MonitorRunRecord> {
    return this.db.transaction(async (tx) => {
      const m = await requireMonitor(tx, accountId, monitorId);
      if (m.status === MONITOR_STATUSES.paused) throw pausedMonitor(monitorId);
      const { rows } = await tx.query<{ id: string }>(
        "SELECT id FROM monitor_runs WHERE monitor_id = $1 AND status IN ('queued', 'running') ORDER BY created_at LIMIT 1",
        [monitorId],
      );
      if (rows[0]) throw runInProgress(monitorId, rows[0].id);
      const run = (await insertRun(tx, runId, m, RUN_TRIGGERS.manual, null, now))!;
      await tx.query('UPDATE monitors SET last_run_at = $1 WHERE id = $2', [now, monitorId]);
      return run;
    });
  }

  async runs(accountId: string, monitorId: string, page: Page): Promise<{ runs: MonitorRunRecord[]; total: number }> {
    await requireMonitor(this.db, accountId, monitorId, false);
    const [list, count] = await Promise.all([
      this.db.query<MonitorRunRecord>(
        `SELECT ${RUN_COLUMNS} FROM monitor_runs WHERE monitor_id = $1 AND account_id = $2 ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $3 OFFSET $4`,
        [monitorId, accountId, page.limit, page.offset],
      ),
      this.db.query<{ n: number }>('SELECT count(*) AS n FROM monitor_runs WHERE monitor_id = $1 AND account_id = $2', [monitorId, accountId]),
    ]);
    return { runs: list.rows, total: count.rows[0]!.n };
  }
}

async function listRow(q: PgQueryable, accountId: string, id: string, lock = false): Promise<TargetListRecord | undefined> {
  const { rows } = await q.query<ListRow>(`SELECT ${LIST_COLUMNS} FROM target_lists WHERE id = $1 AND account_id = $2${lock ? ' FOR SHARE' : ''}`, [id, accountId]);
  return rows[0] && listFromRow(rows[0]);
}

async function monitorRow(q: PgQueryable, accountId: string, id: string, lock = false): Promise<MonitorRecord | undefined> {
  const { rows } = await q.query<MonitorRow>(`SELECT ${MONITOR_COLUMNS} FROM monitors WHERE id = $1 AND account_id = $2${lock ? ' FOR UPDATE' : ''}`, [id, accountId]);
  return rows[0] && monitorFromRow(rows[0]);
}

/** The account's monitor, locked for the rest of the transaction unless `lock` is false; `monitor_not_found` otherwise. */
async function requireMonitor(q: PgQueryable, accountId: string, id: string, lock = true): Promise<MonitorRecord> {
  const m = await monitorRow(q, accountId, id, lock);
  if (!m) throw monitorNotFound();
  return m;
}

async function insertTargets(tx: PgQueryable, monitorId: string, targets: readonly string[], now: number): Promise<number> {
  if (targets.length === 0) return 0;
  const { rowCount } = await tx.query(
    // After the monitor's last, in the order given (issue 33); the monitor row is locked by the caller.
    `INSERT INTO monitor_targets (monitor_id, target, added_at, position)
     SELECT $1, u.t, $3, (SELECT COALESCE(max(position), 0) FROM monitor_targets WHERE monitor_id = $1) + u.n
       FROM unnest($2::text[]) WITH ORDINALITY AS u(t, n) ORDER BY u.n ON CONFLICT DO NOTHING`,
    [monitorId, targets, now],
  );
  return rowCount;
}

async function copyList(tx: PgQueryable, monitorId: string, listId: string, now: number): Promise<number> {
  const { rowCount } = await tx.query(
    // The list's targets after the monitor's last, in the list's order.
    `INSERT INTO monitor_targets (monitor_id, target, added_at, position)
     SELECT $1, target, $2, (SELECT COALESCE(max(position), 0) FROM monitor_targets WHERE monitor_id = $1) + row_number() OVER (ORDER BY position, target COLLATE "C")
       FROM list_targets WHERE list_id = $3 ORDER BY position, target COLLATE "C" ON CONFLICT DO NOTHING`,
    [monitorId, now, listId],
  );
  return rowCount;
}

/** Undefined when the period already has its run: the UNIQUE (monitor_id, period_start) said no. */
async function insertRun(tx: PgQueryable, id: string, m: MonitorRecord, trigger: string, period: number | null, now: number): Promise<MonitorRunRecord | undefined> {
  const { rows } = await tx.query<MonitorRunRecord>(
    `INSERT INTO monitor_runs (id, monitor_id, account_id, triggered_by, period_start, status, created_at) VALUES ($1, $2, $3, $4, $5, 'queued', $6)
     ON CONFLICT (monitor_id, period_start) DO NOTHING RETURNING ${RUN_COLUMNS}`,
    [id, m.id, m.accountId, trigger, period, now],
  );
  return rows[0];
}
