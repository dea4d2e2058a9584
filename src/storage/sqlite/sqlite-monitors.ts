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
import type { Db } from './open-database.js';
import type { SqliteReadThread } from './sqlite-read-thread.js';

/**
 * Lists, monitors and the schedule. Every write is one IMMEDIATE transaction: SQLite's single
 * writer is what serialises a claim, a count check and its insert across processes.
 */
export class SqliteMonitors implements MonitorsPort {
  private readonly s;

  constructor(
    private readonly db: Db,
    /** Where the heavy reads run, off the event loop (issue 27, finding 2); absent: on this thread. */
    private readonly reads?: SqliteReadThread,
  ) {
    this.s = {
      insertList: db.prepare(
        "INSERT INTO target_lists (id, account_id, name, type, status, source_key, created_at) VALUES (?, ?, ?, ?, 'importing', ?, ?)",
      ),
      listById: db.prepare(`SELECT ${LIST_COLUMNS} FROM target_lists WHERE id = ?`),
      list: db.prepare(`SELECT ${LIST_COLUMNS} FROM target_lists WHERE id = ? AND account_id = ?`),
      lists: db.prepare(`SELECT ${LIST_COLUMNS} FROM target_lists WHERE account_id = ? AND (? IS NULL OR type = ?) ORDER BY created_at DESC, id DESC`),
      // A target goes after the list's last (issue 33: results follow the list's order); a duplicate is ignored, keeping its first place.
      insertListTarget: db.prepare(
        'INSERT OR IGNORE INTO list_targets (list_id, target, position) VALUES (?, ?, (SELECT COALESCE(max(position), 0) + 1 FROM list_targets WHERE list_id = ?))',
      ),
      addToList: db.prepare('UPDATE target_lists SET target_count = target_count + ? WHERE id = ?'),
      finishList: db.prepare(
        "UPDATE target_lists SET status = 'ready', invalid_count = ?, duplicate_count = ?, invalid_by_code = ? WHERE id = ?",
      ),
      removeList: db.prepare('DELETE FROM target_lists WHERE id = ? AND account_id = ?'),
      listTargets: db.prepare('SELECT target FROM list_targets WHERE list_id = ? ORDER BY position, target LIMIT ? OFFSET ?').pluck(),

      insertMonitor: db.prepare(
        `INSERT INTO monitors (id, account_id, name, type, frequency, tracked_fields, change_detection, status, schedule_anchor,
           next_run_at, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'active', ?, ?, ?, ?)`,
      ),
      monitor: db.prepare(`SELECT ${MONITOR_COLUMNS} FROM monitors WHERE id = ? AND account_id = ?`),
      monitors: db.prepare(
        `SELECT ${MONITOR_COLUMNS} FROM monitors WHERE account_id = ? AND (? IS NULL OR type = ?) AND (? IS NULL OR status = ?)
         ORDER BY created_at, id LIMIT ? OFFSET ?`,
      ),
      countMonitors: db.prepare('SELECT count(*) AS n FROM monitors WHERE account_id = ? AND (? IS NULL OR type = ?) AND (? IS NULL OR status = ?)'),
      updateMonitor: db.prepare(
        `UPDATE monitors SET name = ?, frequency = ?, tracked_fields = ?, change_detection = ?, schedule_anchor = ?, updated_at = ?
         WHERE id = ? AND account_id = ?`,
      ),
      pause: db.prepare("UPDATE monitors SET status = 'paused', updated_at = ? WHERE id = ? AND account_id = ? AND status = 'active'"),
      cancelQueuedRuns: db.prepare(
        "UPDATE monitor_runs SET status = 'cancelled', reason = ?, finished_at = ? WHERE monitor_id = ? AND account_id = ? AND status = 'queued'",
      ),
      resume: db.prepare("UPDATE monitors SET status = 'active', next_run_at = ?, updated_at = ? WHERE id = ? AND account_id = ?"),
      removeMonitor: db.prepare('DELETE FROM monitors WHERE id = ? AND account_id = ?'),

      insertTarget: db.prepare(
        `INSERT OR IGNORE INTO monitor_targets (monitor_id, target, added_at, position)
         VALUES (?, ?, ?, (SELECT COALESCE(max(position), 0) + 1 FROM monitor_targets WHERE monitor_id = ?))`,
      ),
      lastPosition: db.prepare('SELECT COALESCE(max(position), 0) AS n FROM monitor_targets WHERE monitor_id = ?').pluck(),
      // The list's targets go after the monitor's last, in the list's order.
      copyList: db.prepare(
        `INSERT OR IGNORE INTO monitor_targets (monitor_id, target, added_at, position)
         SELECT ?, target, ?, ? + row_number() OVER (ORDER BY position, target) FROM list_targets WHERE list_id = ?`,
      ),
      deleteTarget: db.prepare('DELETE FROM monitor_targets WHERE monitor_id = ? AND target = ?'),
      countTargets: db.prepare('UPDATE monitors SET target_count = target_count + ?, updated_at = ? WHERE id = ?'),
      targets: db.prepare('SELECT target, added_at AS "addedAt" FROM monitor_targets WHERE monitor_id = ? ORDER BY position, target LIMIT ? OFFSET ?'),
      watched: db.prepare(
        `SELECT m.type AS type, t.target AS target, group_concat(m.id) AS "monitorIds", min(t.added_at) AS "addedAt"
         FROM monitor_targets t JOIN monitors m ON m.id = t.monitor_id
         WHERE m.account_id = ? AND (? IS NULL OR m.type = ?)
         GROUP BY m.type, t.target ORDER BY m.type, t.target LIMIT ? OFFSET ?`,
      ),
      countWatched: db.prepare(
        `SELECT count(*) AS n FROM (SELECT 1 FROM monitor_targets t JOIN monitors m ON m.id = t.monitor_id
         WHERE m.account_id = ? AND (? IS NULL OR m.type = ?) GROUP BY m.type, t.target)`,
      ),

      due: db.prepare(`SELECT ${MONITOR_COLUMNS} FROM monitors WHERE status = 'active' AND next_run_at <= ? ORDER BY next_run_at, id LIMIT ?`),
      advance: db.prepare("UPDATE monitors SET next_run_at = ?, last_run_at = ? WHERE id = ? AND status = 'active' AND next_run_at = ?"),
      insertRun: db.prepare(
        `INSERT OR IGNORE INTO monitor_runs (id, monitor_id, account_id, triggered_by, period_start, status, created_at)
         VALUES (?, ?, ?, ?, ?, 'queued', ?)`,
      ),
      activeRun: db.prepare("SELECT id FROM monitor_runs WHERE monitor_id = ? AND status IN ('queued', 'running') ORDER BY created_at LIMIT 1"),
      ranByHand: db.prepare('UPDATE monitors SET last_run_at = ? WHERE id = ?'),
      run: db.prepare(`SELECT ${RUN_COLUMNS} FROM monitor_runs WHERE id = ?`),
      runs: db.prepare(`SELECT ${RUN_COLUMNS} FROM monitor_runs WHERE monitor_id = ? AND account_id = ? ORDER BY created_at DESC, id DESC LIMIT ? OFFSET ?`),
      countRuns: db.prepare('SELECT count(*) AS n FROM monitor_runs WHERE monitor_id = ? AND account_id = ?'),
    };
  }

  async createList(input: { id: string; accountId: string; name: string; type: MonitorType; sourceKey: string | null; now: number }): Promise<TargetListRecord> {
    this.s.insertList.run(input.id, input.accountId, input.name, input.type, input.sourceKey, input.now);
    return this.listById(input.id)!;
  }

  async addListTargets(listId: string, targets: readonly string[]): Promise<number> {
    return this.db
      .transaction(() => {
        const list = this.listById(listId);
        if (!list) throw listNotFound();
        let added = 0;
        for (const target of targets) added += this.s.insertListTarget.run(listId, target, listId).changes;
        requireWithinTargetLimit(list.targetCount + added);
        this.s.addToList.run(added, listId);
        return added;
      })
      .immediate();
  }

  async finishList(listId: string, counts: { invalidCount: number; duplicateCount: number; invalidByCode: Record<string, number> }): Promise<TargetListRecord> {
    this.s.finishList.run(counts.invalidCount, counts.duplicateCount, JSON.stringify(counts.invalidByCode), listId);
    const list = this.listById(listId);
    if (!list) throw listNotFound();
    return list;
  }

  async getList(accountId: string, id: string): Promise<TargetListRecord | undefined> {
    return this.listRow(accountId, id);
  }

  async lists(accountId: string, type?: MonitorType): Promise<TargetListRecord[]> {
    return (this.s.lists.all(accountId, type ?? null, type ?? null) as ListRow[]).map(listFromRow);
  }

  async removeList(accountId: string, id: string): Promise<boolean> {
    return this.s.removeList.run(id, accountId).changes > 0;
  }

  async listTargets(accountId: string, listId: string, page: Page): Promise<{ targets: string[]; total: number }> {
    const list = this.listRow(accountId, listId);
    if (!list) throw listNotFound();
    return { targets: this.s.listTargets.all(list.id, page.limit, page.offset) as string[], total: list.targetCount };
  }

  async create(monitor: NewMonitor, seed: { listId?: string | undefined; targets?: readonly string[] | undefined } = {}): Promise<MonitorRecord> {
    return this.db
      .transaction(() => {
        const list = seed.listId === undefined ? undefined : requireSeedList(this.listRow(monitor.accountId, seed.listId), monitor.type);
        this.s.insertMonitor.run(
          monitor.id,
          monitor.accountId,
          monitor.name,
          monitor.type,
          monitor.frequency,
          JSON.stringify(monitor.trackedFields),
          monitor.changeDetection,
          monitor.startAt,
          monitor.startAt,
          monitor.now,
          monitor.now,
        );
        let added = list ? this.s.copyList.run(monitor.id, monitor.now, 0, list.id).changes : 0;
        for (const target of seed.targets ?? []) added += this.s.insertTarget.run(monitor.id, target, monitor.now, monitor.id).changes;
        requireWithinTargetLimit(added);
        this.s.countTargets.run(added, monitor.now, monitor.id);
        return this.monitorRow(monitor.accountId, monitor.id)!;
      })
      .immediate();
  }

  async get(accountId: string, id: string): Promise<MonitorRecord | undefined> {
    return this.monitorRow(accountId, id);
  }

  async list(accountId: string, filter: Page & { type?: MonitorType | undefined; status?: MonitorStatus | undefined }): Promise<{ monitors: MonitorRecord[]; total: number }> {
    const type = filter.type ?? null;
    const status = filter.status ?? null;
    const rows = this.s.monitors.all(accountId, type, type, status, status, filter.limit, filter.offset) as MonitorRow[];
    const { n } = this.s.countMonitors.get(accountId, type, type, status, status) as { n: number };
    return { monitors: rows.map(monitorFromRow), total: n };
  }

  async update(accountId: string, id: string, changes: MonitorChanges, now: number): Promise<MonitorRecord | undefined> {
    return this.db
      .transaction(() => {
        const m = this.monitorRow(accountId, id);
        if (!m) return undefined;
        const frequency = changes.frequency ?? m.frequency;
        const anchor = frequency === m.frequency ? m.scheduleAnchor : m.nextRunAt;
        this.s.updateMonitor.run(
          changes.name ?? m.name,
          frequency,
          JSON.stringify(changes.trackedFields ?? m.trackedFields),
          changes.changeDetection ?? m.changeDetection,
          anchor,
          now,
          id,
          accountId,
        );
        return this.monitorRow(accountId, id);
      })
      .immediate();
  }

  async pause(accountId: string, id: string, now: number): Promise<MonitorRecord | undefined> {
    return this.db
      .transaction(() => {
        this.s.pause.run(now, id, accountId);
        // A starter that has taken a queued run holds it as running: only runs still queued go.
        this.s.cancelQueuedRuns.run(RUN_CANCEL_REASONS.monitorPaused, now, id, accountId);
        return this.monitorRow(accountId, id);
      })
      .immediate();
  }

  async resume(accountId: string, id: string, now: number): Promise<MonitorRecord | undefined> {
    return this.db
      .transaction(() => {
        const m = this.monitorRow(accountId, id);
        if (!m || m.status === MONITOR_STATUSES.active) return m;
        const next = m.nextRunAt > now ? m.nextRunAt : nextPeriodAfter(m.scheduleAnchor, m.frequency, now);
        this.s.resume.run(next, now, id, accountId);
        return this.monitorRow(accountId, id);
      })
      .immediate();
  }

  async remove(accountId: string, id: string): Promise<boolean> {
    return this.s.removeMonitor.run(id, accountId).changes > 0;
  }

  async addTargets(accountId: string, monitorId: string, targets: readonly string[], now: number): Promise<{ added: number; present: number }> {
    return this.db
      .transaction(() => {
        const m = this.requireMonitor(accountId, monitorId);
        let added = 0;
        for (const target of targets) added += this.s.insertTarget.run(monitorId, target, now, monitorId).changes;
        requireWithinTargetLimit(m.targetCount + added);
        this.s.countTargets.run(added, now, monitorId);
        return { added, present: targets.length - added };
      })
      .immediate();
  }

  async addListTargetsToMonitor(accountId: string, monitorId: string, listId: string, now: number): Promise<{ added: number; present: number }> {
    return this.db
      .transaction(() => {
        const m = this.requireMonitor(accountId, monitorId);
        const list = requireSeedList(this.listRow(accountId, listId), m.type);
        const added = this.s.copyList.run(monitorId, now, this.s.lastPosition.get(monitorId) as number, list.id).changes;
        requireWithinTargetLimit(m.targetCount + added);
        this.s.countTargets.run(added, now, monitorId);
        return { added, present: list.targetCount - added };
      })
      .immediate();
  }

  async removeTargets(accountId: string, monitorId: string, targets: readonly string[]): Promise<number> {
    return this.db
      .transaction(() => {
        const m = this.requireMonitor(accountId, monitorId);
        let removed = 0;
        for (const target of targets) removed += this.s.deleteTarget.run(monitorId, target).changes;
        this.s.countTargets.run(-removed, m.updatedAt, monitorId);
        return removed;
      })
      .immediate();
  }

  async targets(accountId: string, monitorId: string, page: Page): Promise<{ targets: MonitorTarget[]; total: number }> {
    const m = this.requireMonitor(accountId, monitorId);
    if (this.reads) return { targets: await this.reads.all<MonitorTarget>(this.s.targets.source, [monitorId, page.limit, page.offset]), total: m.targetCount };
    return { targets: this.s.targets.all(monitorId, page.limit, page.offset) as MonitorTarget[], total: m.targetCount };
  }

  async monitoringTargets(accountId: string, filter: Page & { type?: MonitorType | undefined }): Promise<{ targets: MonitoringTarget[]; total: number }> {
    const type = filter.type ?? null;
    type Row = Omit<MonitoringTarget, 'monitorIds'> & { monitorIds: string };
    const [rows, { n }] = this.reads
      ? await Promise.all([
          this.reads.all<Row>(this.s.watched.source, [accountId, type, type, filter.limit, filter.offset]),
          this.reads.get<{ n: number }>(this.s.countWatched.source, [accountId, type, type]).then((r) => r!),
        ])
      : [this.s.watched.all(accountId, type, type, filter.limit, filter.offset) as Row[], this.s.countWatched.get(accountId, type, type) as { n: number }];
    return { targets: rows.map((r) => ({ ...r, monitorIds: r.monitorIds.split(',').sort() })), total: n };
  }

  async claimDueRuns(now: number, limit: number): Promise<MonitorRunRecord[]> {
    return this.db
      .transaction(() => {
        const made: MonitorRunRecord[] = [];
        for (const row of this.s.due.all(now, limit) as MonitorRow[]) {
          const m = monitorFromRow(row);
          const next = nextPeriodAfter(m.scheduleAnchor, m.frequency, now);
          if (this.s.advance.run(next, now, m.id, m.nextRunAt).changes === 0) continue;
          const id = randomUUID();
          const period = periodAtOrBefore(m.scheduleAnchor, m.frequency, now);
          if (this.s.insertRun.run(id, m.id, m.accountId, RUN_TRIGGERS.schedule, period, now).changes === 0) continue;
          made.push(this.s.run.get(id) as MonitorRunRecord);
        }
        return made;
      })
      .immediate();
  }

  async queueManualRun(accountId: string, monitorId: string, runId: string, now: number): Promise<MonitorRunRecord> {
    return this.db
      .transaction(() => {
        const m = this.requireMonitor(accountId, monitorId);
        if (m.status === MONITOR_STATUSES.paused) throw pausedMonitor(monitorId);
        const active = this.s.activeRun.get(monitorId) as { id: string } | undefined;
        if (active) throw runInProgress(monitorId, active.id);
        this.s.insertRun.run(runId, monitorId, accountId, RUN_TRIGGERS.manual, null, now);
        this.s.ranByHand.run(now, monitorId);
        return this.s.run.get(runId) as MonitorRunRecord;
      })
      .immediate();
  }

  async runs(accountId: string, monitorId: string, page: Page): Promise<{ runs: MonitorRunRecord[]; total: number }> {
    this.requireMonitor(accountId, monitorId);
    const runs = this.s.runs.all(monitorId, accountId, page.limit, page.offset) as MonitorRunRecord[];
    const { n } = this.s.countRuns.get(monitorId, accountId) as { n: number };
    return { runs, total: n };
  }

  private listById(id: string): TargetListRecord | undefined {
    const row = this.s.listById.get(id) as ListRow | undefined;
    return row && listFromRow(row);
  }

  private listRow(accountId: string, id: string): TargetListRecord | undefined {
    const row = this.s.list.get(id, accountId) as ListRow | undefined;
    return row && listFromRow(row);
  }

  private monitorRow(accountId: string, id: string): MonitorRecord | undefined {
    const row = this.s.monitor.get(id, accountId) as MonitorRow | undefined;
    return row && monitorFromRow(row);
  }

  private requireMonitor(accountId: string, id: string): MonitorRecord {
    const m = this.monitorRow(accountId, id);
    if (!m) throw monitorNotFound();
    return m;
  }
}
