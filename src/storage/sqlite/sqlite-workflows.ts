import { randomUUID } from 'node:crypto';
import type { Lease } from '../job-records.js';
import type { Page } from '../monitor-records.js';
import type { WorkflowsPort } from '../store.js';
import type { DueMonitorEvent, MonitorEventFire, DueSchedule, ScheduleFire, ScheduleFireResult, StepCommit, StepCommitResult, WorkflowLogRecord, WorkflowRecord, WorkflowRunClaim, WorkflowRunRecord, WorkflowWrite } from '../workflow-records.js';
import { CLAIMABLE, KEPT_EVENT_CURSOR, released, logColumns, notActive, runColumns, runEnded, runNotFound, tooManyRuns, workflowColumns, workflowNotFound } from '../workflow-rows.js';
import type { Db } from './open-database.js';
import type { SqliteBilling } from './sqlite-billing.js';
import type { SqliteResults } from './sqlite-results.js';

class Rollback extends Error {
  constructor(readonly result: StepCommitResult) {
    super(result);
  }
}

/**
 * Workflows on SQLite. Every write is an IMMEDIATE transaction: the single writer serialises two
 * processes' claims, starts and commits, and the epoch and cursor in every step commit's WHERE
 * fence out a process that lost its lease.
 */
export class SqliteWorkflows implements WorkflowsPort {
  private readonly s;

  constructor(
    private readonly db: Db,
    /** The billing cache and result cache the jobs and single lookups use, for lookup steps. */
    private readonly billing: SqliteBilling,
    private readonly results: SqliteResults,
  ) {
    const W = workflowColumns('');
    const R = runColumns('');
    this.s = {
      insert: db.prepare(
        `INSERT INTO workflows (id, account_id, name, description, status, trigger, steps, version, created_at, updated_at, next_run_at, monitor_id, event_after)
         VALUES (@id, @accountId, @name, @description, @status, @trigger, @steps, 1, @now, @now, @nextRunAt, @monitorId, CASE WHEN @monitorId IS NULL THEN NULL ELSE @now END)`,
      ),
      insertVersion: db.prepare(
        `INSERT INTO workflow_versions (workflow_id, version, name, description, status, trigger, steps, created_at)
         SELECT id, version, name, description, status, trigger, steps, updated_at FROM workflows WHERE id = ?`,
      ),
      get: db.prepare(`SELECT ${W} FROM workflows WHERE id = ? AND account_id = ? AND deleted_at IS NULL`),
      list: db.prepare(
        `SELECT ${W} FROM workflows WHERE account_id = @accountId AND deleted_at IS NULL AND (@status IS NULL OR status = @status)
          ORDER BY created_at, id LIMIT @limit OFFSET @offset`,
      ),
      count: db.prepare('SELECT count(*) AS n FROM workflows WHERE account_id = @accountId AND deleted_at IS NULL AND (@status IS NULL OR status = @status)'),
      update: db.prepare(
        `UPDATE workflows SET name = @name, description = @description, status = @status, trigger = @trigger, steps = @steps,
           next_run_at = @nextRunAt, version = version + 1, updated_at = @now,
           monitor_id = @monitorId, event_after = ${KEPT_EVENT_CURSOR('@monitorId', '@status', '@now')}
         WHERE id = @id AND account_id = @accountId AND deleted_at IS NULL`,
      ),
      delete: db.prepare('UPDATE workflows SET deleted_at = ? WHERE id = ? AND account_id = ? AND deleted_at IS NULL'),
      inFlight: db.prepare("SELECT count(*) AS n FROM workflow_runs WHERE account_id = ? AND status IN ('queued', 'running')"),
      insertRun: db.prepare(
        `INSERT INTO workflow_runs (id, account_id, workflow_id, workflow_version, workflow_name, status, input, steps_total, created_at)
         VALUES (?, ?, ?, ?, ?, 'queued', ?, ?, ?)`,
      ),
      run: db.prepare(`SELECT ${R} FROM workflow_runs WHERE id = ? AND account_id = ?`),
      runs: db.prepare(
        `SELECT ${R} FROM workflow_runs WHERE account_id = @accountId AND (@workflowId IS NULL OR workflow_id = @workflowId)
          ORDER BY created_at DESC, id DESC LIMIT @limit OFFSET @offset`,
      ),
      runCount: db.prepare('SELECT count(*) AS n FROM workflow_runs WHERE account_id = @accountId AND (@workflowId IS NULL OR workflow_id = @workflowId)'),
      logs: db.prepare(`SELECT ${logColumns('')} FROM workflow_logs WHERE run_id = ? ORDER BY seq LIMIT ? OFFSET ?`),
      logCount: db.prepare('SELECT count(*) AS n FROM workflow_logs WHERE run_id = ?'),
      claimable: db.prepare(`SELECT id FROM workflow_runs WHERE ${CLAIMABLE} ORDER BY lease_until, created_at, id LIMIT 1`),
      take: db.prepare(
        `UPDATE workflow_runs SET status = 'running', started_at = COALESCE(started_at, @now), lease_owner = @owner,
           lease_epoch = lease_epoch + 1, lease_until = @until WHERE id = @id`,
      ),
      claimed: db.prepare(
        `SELECT ${R}, lease_owner AS leaseOwner, lease_epoch AS leaseEpoch,
           (SELECT steps FROM workflow_versions v WHERE v.workflow_id = r.workflow_id AND v.version = r.workflow_version) AS pinned
           FROM workflow_runs r WHERE id = ?`,
      ),
      renew: db.prepare("UPDATE workflow_runs SET lease_until = ? WHERE id = ? AND lease_owner = ? AND lease_epoch = ? AND status = 'running'"),
      advance: db.prepare(
        `UPDATE workflow_runs SET cursor = @nextCursor, status = @status, attempts = @attempts, wake_at = @wakeAt,
           outputs = COALESCE(@outputs, outputs), steps_completed = @stepsCompleted, credits_used = credits_used + @credits,
           error_code = @errorCode, error_message = @errorMessage, failed_step = @failedStep,
           completed_at = CASE WHEN @status IN ('completed', 'failed', 'cancelled') THEN @now ELSE NULL END,
           lease_until = @leaseUntil, lease_owner = CASE WHEN @release = 1 THEN NULL ELSE lease_owner END
         WHERE id = @runId AND lease_owner = @owner AND lease_epoch = @epoch AND cursor = @cursor AND status = 'running'`,
      ),
      insertLedger: db.prepare("INSERT OR IGNORE INTO ledger (id, account_id, delta, reason, kind, job_id, created_at) VALUES (?, ?, ?, 'charge', ?, NULL, ?)"),
      spend: db.prepare(
        `UPDATE accounts SET credits = credits - @amount
          WHERE id = @accountId AND credits - (SELECT COALESCE(SUM(amount), 0) FROM credit_reservations WHERE account_id = @accountId) >= @amount`,
      ),
      insertDelivery: db.prepare(
        `INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)`,
      ),
      insertLog: db.prepare(
        'INSERT INTO workflow_logs (id, run_id, workflow_id, step_id, level, message, metadata, created_at) SELECT ?, id, workflow_id, ?, ?, ?, ?, ? FROM workflow_runs WHERE id = ?',
      ),
      status: db.prepare('SELECT status FROM workflow_runs WHERE id = ? AND account_id = ?'),
      due: db.prepare(
        `SELECT id, account_id AS accountId, trigger, next_run_at AS nextRunAt FROM workflows
          WHERE next_run_at IS NOT NULL AND next_run_at <= ? AND deleted_at IS NULL AND status = 'active' ORDER BY next_run_at, id LIMIT ?`,
      ),
      dueEvents: db.prepare(
        `SELECT w.id AS workflowId, w.account_id AS accountId, w.monitor_id AS monitorId, r.id AS monitorRunId, r.finished_at AS finishedAt
           FROM workflows w JOIN monitor_runs r ON r.monitor_id = w.monitor_id AND r.account_id = w.account_id
          WHERE w.monitor_id IS NOT NULL AND w.deleted_at IS NULL AND w.status = 'active'
            AND r.status = 'completed' AND r.changes_detected > 0 AND r.finished_at > w.event_after
          ORDER BY r.finished_at, w.id LIMIT ?`,
      ),
      moveEvent: db.prepare("UPDATE workflows SET event_after = ? WHERE id = ? AND event_after < ? AND deleted_at IS NULL AND status = 'active'"),
      pinned: db.prepare(
        'SELECT v.steps FROM workflow_runs r JOIN workflow_versions v ON v.workflow_id = r.workflow_id AND v.version = r.workflow_version WHERE r.id = ? AND r.account_id = ?',
      ),
      insertRerun: db.prepare(
        `INSERT INTO workflow_runs (id, account_id, workflow_id, workflow_version, workflow_name, status, input, outputs, cursor, steps_completed, steps_total, created_at)
         SELECT @id, account_id, workflow_id, workflow_version, workflow_name, 'queued', input, @outputs, @cursor, @stepsCompleted, steps_total, @now FROM workflow_runs WHERE id = @sourceRunId`,
      ),
      moveDue: db.prepare("UPDATE workflows SET next_run_at = ? WHERE id = ? AND next_run_at = ? AND deleted_at IS NULL AND status = 'active'"),
      byId: db.prepare(`SELECT ${W} FROM workflows WHERE id = ?`),
      setIngest: db.prepare(
        `UPDATE workflows SET ingest_prev_hash = ingest_hash, ingest_prev_until = CASE WHEN ingest_hash IS NULL THEN NULL ELSE ? END, ingest_hash = ?
          WHERE id = ? AND account_id = ? AND deleted_at IS NULL`,
      ),
      revokeIngest: db.prepare('UPDATE workflows SET ingest_hash = NULL, ingest_prev_hash = NULL, ingest_prev_until = NULL WHERE id = ? AND account_id = ? AND deleted_at IS NULL'),
      byIngest: db.prepare(
        `SELECT ${W} FROM workflows WHERE deleted_at IS NULL AND (ingest_hash = @hash OR (ingest_prev_hash = @hash AND ingest_prev_until > @now)) LIMIT 1`,
      ),
      cancel: db.prepare(
        "UPDATE workflow_runs SET status = 'cancelled', completed_at = ?, wake_at = NULL, lease_epoch = lease_epoch + 1, lease_until = 0 WHERE id = ? AND status IN ('queued', 'running')",
      ),
      redrive: db.prepare(
        `UPDATE workflow_runs SET status = 'queued', completed_at = NULL, error_code = NULL, error_message = NULL, failed_step = NULL,
           attempts = 0, wake_at = NULL, lease_epoch = lease_epoch + 1, lease_until = 0 WHERE id = ? AND status = 'failed'`,
      ),
    };
  }

  async create(input: WorkflowWrite & { id: string; accountId: string; now: number }): Promise<WorkflowRecord> {
    return this.db
      .transaction(() => {
        this.s.insert.run({ ...input, monitorId: input.monitorId ?? null });
        this.s.insertVersion.run(input.id);
        return this.s.get.get(input.id, input.accountId) as WorkflowRecord;
      })
      .immediate();
  }

  async get(accountId: string, id: string): Promise<WorkflowRecord | undefined> {
    return this.s.get.get(id, accountId) as WorkflowRecord | undefined;
  }

  async list(accountId: string, filter: Page & { status?: string | undefined }): Promise<{ workflows: WorkflowRecord[]; total: number }> {
    const args = { accountId, status: filter.status ?? null };
    const workflows = this.s.list.all({ ...args, limit: filter.limit, offset: filter.offset }) as WorkflowRecord[];
    return { workflows, total: (this.s.count.get(args) as { n: number }).n };
  }

  async update(accountId: string, id: string, changes: WorkflowWrite, now: number): Promise<WorkflowRecord | undefined> {
    return this.db
      .transaction(() => {
        if (this.s.update.run({ ...changes, monitorId: changes.monitorId ?? null, id, accountId, now }).changes === 0) return undefined;
        this.s.insertVersion.run(id);
        return this.s.get.get(id, accountId) as WorkflowRecord;
      })
      .immediate();
  }

  async delete(accountId: string, id: string, now: number): Promise<boolean> {
    return this.s.delete.run(now, id, accountId).changes > 0;
  }

  async startRun(input: { id: string; accountId: string; workflowId: string; input: string; maxInFlight: number; now: number }): Promise<WorkflowRunRecord> {
    return this.db
      .transaction(() => {
        const wf = this.s.get.get(input.workflowId, input.accountId) as WorkflowRecord | undefined;
        if (!wf) throw workflowNotFound(input.workflowId);
        if (wf.status !== 'active') throw notActive(wf.id, wf.status);
        if ((this.s.inFlight.get(input.accountId) as { n: number }).n >= input.maxInFlight) throw tooManyRuns(input.maxInFlight);
        const steps = (JSON.parse(wf.steps) as unknown[]).length;
        this.s.insertRun.run(input.id, input.accountId, wf.id, wf.version, wf.name, input.input, steps, input.now);
        return this.s.run.get(input.id, input.accountId) as WorkflowRunRecord;
      })
      .immediate();
  }

  async dueSchedules(now: number, limit: number): Promise<DueSchedule[]> {
    return this.s.due.all(now, limit) as DueSchedule[];
  }

  async fireSchedule(f: ScheduleFire): Promise<ScheduleFireResult> {
    return this.fire(f, () => this.s.moveDue.run(f.nextAt, f.workflowId, f.dueAt).changes > 0);
  }

  async pinnedSteps(accountId: string, runId: string): Promise<string | undefined> {
    return (this.s.pinned.get(runId, accountId) as { steps: string } | undefined)?.steps;
  }

  async rerun(input: { sourceRunId: string; id: string; accountId: string; cursor: number; outputs: string; stepsCompleted: number; maxInFlight: number; now: number }): Promise<WorkflowRunRecord> {
    return this.db
      .transaction(() => {
        const found = this.s.status.get(input.sourceRunId, input.accountId) as { status: string } | undefined;
        if (!found) throw runNotFound(input.sourceRunId);
        if (found.status === 'queued' || found.status === 'running') throw runEnded(input.sourceRunId, found.status, 'only a run that has ended can be run again');
        if ((this.s.inFlight.get(input.accountId) as { n: number }).n >= input.maxInFlight) throw tooManyRuns(input.maxInFlight);
        this.s.insertRerun.run({ id: input.id, outputs: input.outputs, cursor: input.cursor, stepsCompleted: input.stepsCompleted, now: input.now, sourceRunId: input.sourceRunId });
        this.s.insertLog.run(`wfl_${randomUUID()}`, null, 'info', `run again from step ${input.cursor + 1} of run ${input.sourceRunId}`, JSON.stringify({ source_run_id: input.sourceRunId, cursor: input.cursor }), input.now, input.id);
        return this.s.run.get(input.id, input.accountId) as WorkflowRunRecord;
      })
      .immediate();
  }

  async dueMonitorEvents(limit: number): Promise<DueMonitorEvent[]> {
    return this.s.dueEvents.all(limit) as DueMonitorEvent[];
  }

  async fireMonitorEvent(f: MonitorEventFire): Promise<ScheduleFireResult> {
    return this.fire(f, () => this.s.moveEvent.run(f.finishedAt, f.workflowId, f.finishedAt).changes > 0);
  }

  /** A run a trigger starts: `move` is the trigger's compare-and-set (false: another process fired first). */
  private fire(f: { workflowId: string; runId: string; input: string; maxInFlight: number; now: number }, move: () => boolean): Promise<ScheduleFireResult> {
    return Promise.resolve(
      this.db
        .transaction((): ScheduleFireResult => {
          if (!move()) return 'taken';
          const wf = this.s.byId.get(f.workflowId) as WorkflowRecord;
          if ((this.s.inFlight.get(wf.accountId) as { n: number }).n >= f.maxInFlight) return 'limited';
          this.s.insertRun.run(f.runId, wf.accountId, wf.id, wf.version, wf.name, f.input, (JSON.parse(wf.steps) as unknown[]).length, f.now);
          return 'started';
        })
        .immediate(),
    );
  }

  async setIngestToken(accountId: string, id: string, hash: string, graceUntil: number): Promise<boolean> {
    return this.s.setIngest.run(graceUntil, hash, id, accountId).changes > 0;
  }

  async revokeIngestToken(accountId: string, id: string): Promise<boolean> {
    return this.s.revokeIngest.run(id, accountId).changes > 0;
  }

  async byIngestToken(hash: string, now: number): Promise<WorkflowRecord | undefined> {
    return this.s.byIngest.get({ hash, now }) as WorkflowRecord | undefined;
  }

  async run(accountId: string, runId: string): Promise<WorkflowRunRecord | undefined> {
    return this.s.run.get(runId, accountId) as WorkflowRunRecord | undefined;
  }

  async runs(accountId: string, filter: Page & { workflowId?: string | undefined }): Promise<{ runs: WorkflowRunRecord[]; total: number }> {
    const args = { accountId, workflowId: filter.workflowId ?? null };
    const runs = this.s.runs.all({ ...args, limit: filter.limit, offset: filter.offset }) as WorkflowRunRecord[];
    return { runs, total: (this.s.runCount.get(args) as { n: number }).n };
  }

  async logs(accountId: string, runId: string, page: Page): Promise<{ logs: WorkflowLogRecord[]; total: number }> {
    if (!this.s.run.get(runId, accountId)) throw runNotFound(runId);
    const logs = this.s.logs.all(runId, page.limit, page.offset) as WorkflowLogRecord[];
    return { logs, total: (this.s.logCount.get(runId) as { n: number }).n };
  }

  async claimRun(owner: string, now: number, leaseMs: number): Promise<WorkflowRunClaim | undefined> {
    return this.db
      .transaction(() => {
        const found = this.s.claimable.get({ now }) as { id: string } | undefined;
        if (!found) return undefined;
        this.s.take.run({ now, owner, until: now + leaseMs, id: found.id });
        const { leaseOwner, leaseEpoch, pinned, ...run } = this.s.claimed.get(found.id) as WorkflowRunRecord & { leaseOwner: string; leaseEpoch: number; pinned: string };
        return { run, steps: pinned, lease: { owner: leaseOwner, epoch: leaseEpoch } };
      })
      .immediate();
  }

  async renewLease(runId: string, lease: Lease, until: number): Promise<boolean> {
    return this.s.renew.run(until, runId, lease.owner, lease.epoch).changes > 0;
  }

  async commitStep(c: StepCommit): Promise<StepCommitResult> {
    try {
      const result = this.db
        .transaction((): StepCommitResult => {
          const charge = c.charge && c.charge.amount > 0 ? c.charge : undefined;
          // Checked before anything is written: a key paid for meanwhile makes the step free, and
          // the driver commits it again without the charge.
          if (charge?.repeatFree && this.billing.freshlyBilledSync(c.accountId, charge.kind, [charge.repeatFree.key], charge.repeatFree.since).size > 0) {
            throw new Rollback('billed');
          }
          let credits = 0;
          let ledgerSeq: number | undefined;
          if (charge) {
            const line = this.s.insertLedger.run(charge.ledgerId, c.accountId, -charge.amount, charge.kind, c.now);
            if (line.changes > 0) {
              if (this.s.spend.run({ amount: charge.amount, accountId: c.accountId }).changes === 0) throw new Rollback('insufficient_credits');
              credits = charge.amount;
              ledgerSeq = Number(line.lastInsertRowid);
            }
          }
          const moved = this.s.advance.run({
            nextCursor: c.next.cursor,
            status: c.next.status,
            attempts: c.next.attempts,
            wakeAt: c.next.wakeAt,
            outputs: c.next.outputs ?? null,
            stepsCompleted: c.next.stepsCompleted,
            credits,
            errorCode: c.next.error?.code ?? null,
            errorMessage: c.next.error?.message ?? null,
            failedStep: c.next.error?.step ?? null,
            now: c.now,
            leaseUntil: c.leaseUntil,
            release: released(c) ? 1 : 0,
            runId: c.runId,
            owner: c.lease.owner,
            epoch: c.lease.epoch,
            cursor: c.cursor,
          });
          // Fenced out: the charge above (if any) rolls back with everything else.
          if (moved.changes === 0) throw new Rollback('lease_lost');
          // Last of the billing writes: nothing may check the billing cache after it in this transaction.
          if (charge?.repeatFree && ledgerSeq !== undefined) this.billing.recordChargeSync(c.accountId, charge.kind, charge.repeatFree.key, ledgerSeq, c.now);
          for (const entry of c.cache ?? []) this.results.putSync(entry.kind, entry.key, entry.result, c.now);
          if (c.delivery) {
            const d = c.delivery;
            this.s.insertDelivery.run(d.id, d.webhookId, d.messageId, d.eventType, d.payload, c.now, c.now);
          }
          for (const log of c.logs) this.s.insertLog.run(log.id, log.stepId, log.level, log.message, log.metadata, c.now, c.runId);
          return 'committed';
        })
        .immediate();
      this.billing.afterCommit();
      return result;
    } catch (e) {
      if (e instanceof Rollback) return e.result;
      throw e;
    }
  }

  async cancel(accountId: string, runId: string, now: number): Promise<WorkflowRunRecord> {
    return this.db
      .transaction(() => {
        const found = this.s.status.get(runId, accountId) as { status: string } | undefined;
        if (!found) throw runNotFound(runId);
        if (this.s.cancel.run(now, runId).changes === 0) throw runEnded(runId, found.status, 'only a queued or running run can be cancelled');
        this.s.insertLog.run(`wfl_${randomUUID()}`, null, 'info', 'run cancelled', '{}', now, runId);
        return this.s.run.get(runId, accountId) as WorkflowRunRecord;
      })
      .immediate();
  }

  async redrive(accountId: string, runId: string, now: number): Promise<WorkflowRunRecord> {
    return this.db
      .transaction(() => {
        const found = this.s.status.get(runId, accountId) as { status: string } | undefined;
        if (!found) throw runNotFound(runId);
        if (this.s.redrive.run(runId).changes === 0) throw runEnded(runId, found.status, 'only a failed run can be redriven');
        this.s.insertLog.run(`wfl_${randomUUID()}`, null, 'info', 'run redriven from its failed step', '{}', now, runId);
        return this.s.run.get(runId, accountId) as WorkflowRunRecord;
      })
      .immediate();
  }
}

