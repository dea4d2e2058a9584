import { randomUUID } from 'node:crypto';
import type { Lease } from '../job-records.js';
import type { Page } from '../monitor-records.js';
import type { WorkflowsPort } from '../store.js';
import type { DueMonitorEvent, MonitorEventFire, DueSchedule, ScheduleFire, ScheduleFireResult, StepCommit, StepCommitResult, WorkflowLogRecord, WorkflowRecord, WorkflowRunClaim, WorkflowRunRecord, WorkflowWrite } from '../workflow-records.js';
import { CLAIMABLE, KEPT_EVENT_CURSOR, released, logColumns, notActive, runColumns, runEnded, runNotFound, tooManyRuns, workflowColumns, workflowNotFound } from '../workflow-rows.js';
import type { BillingKeys } from '../billing-key.js';
import { billedAfter, insertLedgerLine, lockAccount, recordBilled } from './pg-core-charges.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';
import { putResults } from './pg-results.js';

const W = workflowColumns('"');
const R = runColumns('"');

class Rollback extends Error {
  constructor(readonly result: StepCommitResult) {
    super(result);
  }
}

const INSERT_VERSION = `INSERT INTO workflow_versions (workflow_id, version, name, description, status, trigger, steps, created_at)
  SELECT id, version, name, description, status, trigger, steps, updated_at FROM workflows WHERE id = $1`;
const INSERT_LOG = `INSERT INTO workflow_logs (id, run_id, workflow_id, step_id, level, message, metadata, created_at)
  SELECT $1, id, workflow_id, $2, $3, $4, $5, $6 FROM workflow_runs WHERE id = $7`;

/**
 * Workflows at READ COMMITTED. A claim takes its run with FOR UPDATE SKIP LOCKED, so processes
 * share the due runs; starts take a transaction-scoped advisory lock on the account, so two
 * starts never both pass the runs-in-flight limit; a step commit's UPDATE carries the lease epoch
 * and the cursor, so a process that lost its lease writes nothing (its charge rolls back with it).
 */
export class PgWorkflows implements WorkflowsPort {
  constructor(
    private readonly db: PgDatabase,
    /** The billing cache's key names, for lookup steps' repeat-free charges. */
    private readonly names: BillingKeys,
  ) {}

  private async one<T>(q: PgQueryable, sql: string, params: unknown[]): Promise<T | undefined> {
    return (await q.query(sql, params)).rows[0] as T | undefined;
  }

  async create(input: WorkflowWrite & { id: string; accountId: string; now: number }): Promise<WorkflowRecord> {
    return this.db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO workflows (id, account_id, name, description, status, trigger, steps, version, created_at, updated_at, next_run_at, monitor_id, event_after)
         VALUES ($1, $2, $3, $4, $5, $6, $7, 1, $8, $8, $9, $10, CASE WHEN $10::text IS NULL THEN NULL ELSE $8::bigint END)`,
        [input.id, input.accountId, input.name, input.description, input.status, input.trigger, input.steps, input.now, input.nextRunAt, input.monitorId ?? null],
      );
      await tx.query(INSERT_VERSION, [input.id]);
      return (await this.one<WorkflowRecord>(tx, `SELECT ${W} FROM workflows WHERE id = $1`, [input.id]))!;
    });
  }

  async get(accountId: string, id: string): Promise<WorkflowRecord | undefined> {
    return this.one(this.db, `SELECT ${W} FROM workflows WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL`, [id, accountId]);
  }

  async list(accountId: string, filter: Page & { status?: string | undefined }): Promise<{ workflows: WorkflowRecord[]; total: number }> {
    const where = 'account_id = $1 AND deleted_at IS NULL AND ($2::text IS NULL OR status = $2)';
    const { rows } = await this.db.query<WorkflowRecord>(`SELECT ${W} FROM workflows WHERE ${where} ORDER BY created_at, id COLLATE "C" LIMIT $3 OFFSET $4`, [
      accountId,
      filter.status ?? null,
      filter.limit,
      filter.offset,
    ]);
    const count = await this.one<{ n: number }>(this.db, `SELECT count(*) AS n FROM workflows WHERE ${where}`, [accountId, filter.status ?? null]);
    return { workflows: rows, total: count!.n };
  }

  async update(accountId: string, id: string, c: WorkflowWrite, now: number): Promise<WorkflowRecord | undefined> {
    return this.db.transaction(async (tx) => {
      const moved = await tx.query(
        `UPDATE workflows SET name = $1, description = $2, status = $3, trigger = $4, steps = $5, version = version + 1, updated_at = $6, next_run_at = $9,
           monitor_id = $10, event_after = ${KEPT_EVENT_CURSOR('$10::text', '$3', '$6::bigint')}
          WHERE id = $7 AND account_id = $8 AND deleted_at IS NULL`,
        [c.name, c.description, c.status, c.trigger, c.steps, now, id, accountId, c.nextRunAt, c.monitorId ?? null],
      );
      if (moved.rowCount === 0) return undefined;
      await tx.query(INSERT_VERSION, [id]);
      return this.one<WorkflowRecord>(tx, `SELECT ${W} FROM workflows WHERE id = $1`, [id]);
    });
  }

  async delete(accountId: string, id: string, now: number): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE workflows SET deleted_at = $1 WHERE id = $2 AND account_id = $3 AND deleted_at IS NULL', [now, id, accountId]);
    return rowCount > 0;
  }

  async startRun(input: { id: string; accountId: string; workflowId: string; input: string; maxInFlight: number; now: number }): Promise<WorkflowRunRecord> {
    return this.db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('workflow_runs:' || $1))", [input.accountId]);
      const wf = await this.one<WorkflowRecord>(tx, `SELECT ${W} FROM workflows WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL FOR SHARE`, [
        input.workflowId,
        input.accountId,
      ]);
      if (!wf) throw workflowNotFound(input.workflowId);
      if (wf.status !== 'active') throw notActive(wf.id, wf.status);
      const busy = await this.one<{ n: number }>(tx, "SELECT count(*) AS n FROM workflow_runs WHERE account_id = $1 AND status IN ('queued', 'running')", [input.accountId]);
      if (busy!.n >= input.maxInFlight) throw tooManyRuns(input.maxInFlight);
      await tx.query(
        `INSERT INTO workflow_runs (id, account_id, workflow_id, workflow_version, workflow_name, status, input, steps_total, created_at)
         VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8)`,
        [input.id, input.accountId, wf.id, wf.version, wf.name, input.input, (JSON.parse(wf.steps) as unknown[]).length, input.now],
      );
      return (await this.one<WorkflowRunRecord>(tx, `SELECT ${R} FROM workflow_runs WHERE id = $1`, [input.id]))!;
    });
  }

  async dueSchedules(now: number, limit: number): Promise<DueSchedule[]> {
    const { rows } = await this.db.query<DueSchedule>(
      `SELECT id, account_id AS "accountId", trigger, next_run_at AS "nextRunAt" FROM workflows
        WHERE next_run_at IS NOT NULL AND next_run_at <= $1 AND deleted_at IS NULL AND status = 'active' ORDER BY next_run_at, id COLLATE "C" LIMIT $2`,
      [now, limit],
    );
    return rows;
  }

  async fireSchedule(f: ScheduleFire): Promise<ScheduleFireResult> {
    return this.fire(f, (tx) => tx.query("UPDATE workflows SET next_run_at = $1 WHERE id = $2 AND next_run_at = $3 AND deleted_at IS NULL AND status = 'active'", [f.nextAt, f.workflowId, f.dueAt]));
  }

  async pinnedSteps(accountId: string, runId: string): Promise<string | undefined> {
    const row = await this.one<{ steps: string }>(
      this.db,
      'SELECT v.steps FROM workflow_runs r JOIN workflow_versions v ON v.workflow_id = r.workflow_id AND v.version = r.workflow_version WHERE r.id = $1 AND r.account_id = $2',
      [runId, accountId],
    );
    return row?.steps;
  }

  async rerun(input: { sourceRunId: string; id: string; accountId: string; cursor: number; outputs: string; stepsCompleted: number; maxInFlight: number; now: number }): Promise<WorkflowRunRecord> {
    return this.db.transaction(async (tx) => {
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('workflow_runs:' || $1))", [input.accountId]);
      const found = await this.one<{ status: string }>(tx, 'SELECT status FROM workflow_runs WHERE id = $1 AND account_id = $2', [input.sourceRunId, input.accountId]);
      if (!found) throw runNotFound(input.sourceRunId);
      if (found.status === 'queued' || found.status === 'running') throw runEnded(input.sourceRunId, found.status, 'only a run that has ended can be run again');
      const busy = await this.one<{ n: number }>(tx, "SELECT count(*) AS n FROM workflow_runs WHERE account_id = $1 AND status IN ('queued', 'running')", [input.accountId]);
      if (busy!.n >= input.maxInFlight) throw tooManyRuns(input.maxInFlight);
      await tx.query(
        `INSERT INTO workflow_runs (id, account_id, workflow_id, workflow_version, workflow_name, status, input, outputs, cursor, steps_completed, steps_total, created_at)
         SELECT $1, account_id, workflow_id, workflow_version, workflow_name, 'queued', input, $2, $3, $6, steps_total, $4 FROM workflow_runs WHERE id = $5`,
        [input.id, input.outputs, input.cursor, input.now, input.sourceRunId, input.stepsCompleted],
      );
      await tx.query(INSERT_LOG, [`wfl_${randomUUID()}`, null, 'info', `run again from step ${input.cursor + 1} of run ${input.sourceRunId}`, JSON.stringify({ source_run_id: input.sourceRunId, cursor: input.cursor }), input.now, input.id]);
      return (await this.one<WorkflowRunRecord>(tx, `SELECT ${R} FROM workflow_runs WHERE id = $1`, [input.id]))!;
    });
  }

  async dueMonitorEvents(limit: number): Promise<DueMonitorEvent[]> {
    const { rows } = await this.db.query<DueMonitorEvent>(
      `SELECT w.id AS "workflowId", w.account_id AS "accountId", w.monitor_id AS "monitorId", r.id AS "monitorRunId", r.finished_at AS "finishedAt"
         FROM workflows w JOIN monitor_runs r ON r.monitor_id = w.monitor_id AND r.account_id = w.account_id
        WHERE w.monitor_id IS NOT NULL AND w.deleted_at IS NULL AND w.status = 'active'
          AND r.status = 'completed' AND r.changes_detected > 0 AND r.finished_at > w.event_after
        ORDER BY r.finished_at, w.id COLLATE "C" LIMIT $1`,
      [limit],
    );
    return rows;
  }

  async fireMonitorEvent(f: MonitorEventFire): Promise<ScheduleFireResult> {
    return this.fire(f, (tx) => tx.query("UPDATE workflows SET event_after = $1 WHERE id = $2 AND event_after < $1 AND deleted_at IS NULL AND status = 'active'", [f.finishedAt, f.workflowId]));
  }

  /**
   * A run a trigger starts: `move` is the trigger's compare-and-set (its rowCount 0: another
   * process fired first), then the runs-in-flight check and the run, under the account's lock.
   */
  private fire(f: { workflowId: string; runId: string; input: string; maxInFlight: number; now: number }, move: (tx: PgQueryable) => Promise<{ rowCount: number }>): Promise<ScheduleFireResult> {
    return this.db.transaction(async (tx): Promise<ScheduleFireResult> => {
      const owner = await this.one<{ accountId: string }>(tx, 'SELECT account_id AS "accountId" FROM workflows WHERE id = $1', [f.workflowId]);
      if (!owner) return 'taken';
      await tx.query("SELECT pg_advisory_xact_lock(hashtext('workflow_runs:' || $1))", [owner.accountId]);
      if ((await move(tx)).rowCount === 0) return 'taken';
      const wf = (await this.one<WorkflowRecord>(tx, `SELECT ${W} FROM workflows WHERE id = $1`, [f.workflowId]))!;
      const busy = await this.one<{ n: number }>(tx, "SELECT count(*) AS n FROM workflow_runs WHERE account_id = $1 AND status IN ('queued', 'running')", [wf.accountId]);
      if (busy!.n >= f.maxInFlight) return 'limited';
      await tx.query(
        `INSERT INTO workflow_runs (id, account_id, workflow_id, workflow_version, workflow_name, status, input, steps_total, created_at)
         VALUES ($1, $2, $3, $4, $5, 'queued', $6, $7, $8) ON CONFLICT (id) DO NOTHING`,
        [f.runId, wf.accountId, wf.id, wf.version, wf.name, f.input, (JSON.parse(wf.steps) as unknown[]).length, f.now],
      );
      return 'started';
    });
  }

  async setIngestToken(accountId: string, id: string, hash: string, graceUntil: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE workflows SET ingest_prev_hash = ingest_hash, ingest_prev_until = CASE WHEN ingest_hash IS NULL THEN NULL ELSE $1::bigint END, ingest_hash = $2
        WHERE id = $3 AND account_id = $4 AND deleted_at IS NULL`,
      [graceUntil, hash, id, accountId],
    );
    return rowCount > 0;
  }

  async revokeIngestToken(accountId: string, id: string): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE workflows SET ingest_hash = NULL, ingest_prev_hash = NULL, ingest_prev_until = NULL WHERE id = $1 AND account_id = $2 AND deleted_at IS NULL',
      [id, accountId],
    );
    return rowCount > 0;
  }

  async byIngestToken(hash: string, now: number): Promise<WorkflowRecord | undefined> {
    return this.one(this.db, `SELECT ${W} FROM workflows WHERE deleted_at IS NULL AND (ingest_hash = $1 OR (ingest_prev_hash = $1 AND ingest_prev_until > $2)) LIMIT 1`, [hash, now]);
  }

  async run(accountId: string, runId: string): Promise<WorkflowRunRecord | undefined> {
    return this.one(this.db, `SELECT ${R} FROM workflow_runs WHERE id = $1 AND account_id = $2`, [runId, accountId]);
  }

  async runs(accountId: string, filter: Page & { workflowId?: string | undefined }): Promise<{ runs: WorkflowRunRecord[]; total: number }> {
    const where = 'account_id = $1 AND ($2::text IS NULL OR workflow_id = $2)';
    const { rows } = await this.db.query<WorkflowRunRecord>(
      `SELECT ${R} FROM workflow_runs WHERE ${where} ORDER BY created_at DESC, id COLLATE "C" DESC LIMIT $3 OFFSET $4`,
      [accountId, filter.workflowId ?? null, filter.limit, filter.offset],
    );
    const count = await this.one<{ n: number }>(this.db, `SELECT count(*) AS n FROM workflow_runs WHERE ${where}`, [accountId, filter.workflowId ?? null]);
    return { runs: rows, total: count!.n };
  }

  async logs(accountId: string, runId: string, page: Page): Promise<{ logs: WorkflowLogRecord[]; total: number }> {
    if (!(await this.run(accountId, runId))) throw runNotFound(runId);
    const { rows } = await this.db.query<WorkflowLogRecord>(`SELECT ${logColumns('"')} FROM workflow_logs WHERE run_id = $1 ORDER BY seq LIMIT $2 OFFSET $3`, [
      runId,
      page.limit,
      page.offset,
    ]);
    const count = await this.one<{ n: number }>(this.db, 'SELECT count(*) AS n FROM workflow_logs WHERE run_id = $1', [runId]);
    return { logs: rows, total: count!.n };
  }

  async claimRun(owner: string, now: number, leaseMs: number): Promise<WorkflowRunClaim | undefined> {
    return this.db.transaction(async (tx) => {
      const found = await this.one<{ id: string }>(
        tx,
        `SELECT id FROM workflow_runs WHERE ${CLAIMABLE.replaceAll('$now', '$1')} ORDER BY lease_until, created_at, id COLLATE "C" LIMIT 1 FOR UPDATE SKIP LOCKED`,
        [now],
      );
      if (!found) return undefined;
      await tx.query(
        `UPDATE workflow_runs SET status = 'running', started_at = COALESCE(started_at, $1), lease_owner = $2, lease_epoch = lease_epoch + 1, lease_until = $3
          WHERE id = $4`,
        [now, owner, now + leaseMs, found.id],
      );
      const row = (await this.one<WorkflowRunRecord & { leaseOwner: string; leaseEpoch: number; pinned: string }>(
        tx,
        `SELECT ${R}, lease_owner AS "leaseOwner", lease_epoch AS "leaseEpoch",
           (SELECT steps FROM workflow_versions v WHERE v.workflow_id = r.workflow_id AND v.version = r.workflow_version) AS pinned
           FROM workflow_runs r WHERE id = $1`,
        [found.id],
      ))!;
      const { leaseOwner, leaseEpoch, pinned, ...run } = row;
      return { run, steps: pinned, lease: { owner: leaseOwner, epoch: leaseEpoch } };
    });
  }

  async renewLease(runId: string, lease: Lease, until: number): Promise<boolean> {
    const { rowCount } = await this.db.query("UPDATE workflow_runs SET lease_until = $1 WHERE id = $2 AND lease_owner = $3 AND lease_epoch = $4 AND status = 'running'", [
      until,
      runId,
      lease.owner,
      lease.epoch,
    ]);
    return rowCount > 0;
  }

  async commitStep(c: StepCommit): Promise<StepCommitResult> {
    try {
      return await this.db.transaction(async (tx): Promise<StepCommitResult> => {
        // The run's row first: a commit fenced out fails before it touches the account's balance.
        const moved = await tx.query(
          `UPDATE workflow_runs SET cursor = $1, status = $2, attempts = $3, wake_at = $4, outputs = COALESCE($5, outputs), steps_completed = $6,
             error_code = $7, error_message = $8, failed_step = $9,
             completed_at = CASE WHEN $2 IN ('completed', 'failed', 'cancelled') THEN $10::bigint ELSE NULL END, lease_until = $11,
             lease_owner = CASE WHEN $16 THEN NULL ELSE lease_owner END
           WHERE id = $12 AND lease_owner = $13 AND lease_epoch = $14 AND cursor = $15 AND status = 'running'`,
          [
            c.next.cursor,
            c.next.status,
            c.next.attempts,
            c.next.wakeAt,
            c.next.outputs ?? null,
            c.next.stepsCompleted,
            c.next.error?.code ?? null,
            c.next.error?.message ?? null,
            c.next.error?.step ?? null,
            c.now,
            c.leaseUntil,
            c.runId,
            c.lease.owner,
            c.lease.epoch,
            c.cursor,
            released(c),
          ],
        );
        if (moved.rowCount === 0) throw new Rollback('lease_lost');
        const charge = c.charge && c.charge.amount > 0 ? c.charge : undefined;
        if (charge) {
          // The account's row lock, as every charge takes it: the repeat-free check and the record
          // below see no other charge of the account half done.
          const account = await lockAccount(tx, c.accountId);
          const free = charge.repeatFree;
          if (free && (await billedAfter(tx, this.names, account.seq, [charge.kind], [[free.key]], free.since))[0]!.size > 0) throw new Rollback('billed');
          const ledgerSeq = await insertLedgerLine(tx, { id: charge.ledgerId, accountId: c.accountId, delta: -charge.amount, reason: 'charge', kind: charge.kind, jobId: null, now: c.now });
          if (ledgerSeq !== undefined) {
            const spent = await tx.query(
              `UPDATE accounts SET credits = credits - $1
                WHERE id = $2 AND credits - (SELECT COALESCE(SUM(amount), 0) FROM credit_reservations WHERE account_id = $2) >= $1`,
              [charge.amount, c.accountId],
            );
            if (spent.rowCount === 0) throw new Rollback('insufficient_credits');
            await tx.query('UPDATE workflow_runs SET credits_used = credits_used + $1 WHERE id = $2', [charge.amount, c.runId]);
            if (free) await recordBilled(tx, this.names, account.seq, [{ kind: charge.kind, key: free.key, ledgerSeq }], c.now);
          }
        }
        await putResults(tx, c.cache ?? [], c.now);
        if (c.delivery) {
          const d = c.delivery;
          await tx.query(
            `INSERT INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, next_attempt_at, created_at)
             VALUES ($1, $2, $3, $4, $5, 'pending', 0, $6, $6) ON CONFLICT DO NOTHING`,
            [d.id, d.webhookId, d.messageId, d.eventType, d.payload, c.now],
          );
        }
        for (const log of c.logs) await tx.query(INSERT_LOG, [log.id, log.stepId, log.level, log.message, log.metadata, c.now, c.runId]);
        return 'committed';
      });
    } catch (e) {
      if (e instanceof Rollback) return e.result;
      throw e;
    }
  }

  async cancel(accountId: string, runId: string, now: number): Promise<WorkflowRunRecord> {
    return this.db.transaction(async (tx) => {
      const found = await this.one<{ status: string }>(tx, 'SELECT status FROM workflow_runs WHERE id = $1 AND account_id = $2 FOR UPDATE', [runId, accountId]);
      if (!found) throw runNotFound(runId);
      const moved = await tx.query(
        "UPDATE workflow_runs SET status = 'cancelled', completed_at = $1, wake_at = NULL, lease_epoch = lease_epoch + 1, lease_until = 0 WHERE id = $2 AND status IN ('queued', 'running')",
        [now, runId],
      );
      if (moved.rowCount === 0) throw runEnded(runId, found.status, 'only a queued or running run can be cancelled');
      await tx.query(INSERT_LOG, [`wfl_${randomUUID()}`, null, 'info', 'run cancelled', '{}', now, runId]);
      return (await this.one<WorkflowRunRecord>(tx, `SELECT ${R} FROM workflow_runs WHERE id = $1`, [runId]))!;
    });
  }

  async redrive(accountId: string, runId: string, now: number): Promise<WorkflowRunRecord> {
    return this.db.transaction(async (tx) => {
      const found = await this.one<{ status: string }>(tx, 'SELECT status FROM workflow_runs WHERE id = $1 AND account_id = $2 FOR UPDATE', [runId, accountId]);
      if (!found) throw runNotFound(runId);
      const moved = await tx.query(
        `UPDATE workflow_runs SET status = 'queued', completed_at = NULL, error_code = NULL, error_message = NULL, failed_step = NULL,
           attempts = 0, wake_at = NULL, lease_epoch = lease_epoch + 1, lease_until = 0 WHERE id = $1 AND status = 'failed'`,
        [runId],
      );
      if (moved.rowCount === 0) throw runEnded(runId, found.status, 'only a failed run can be redriven');
      await tx.query(INSERT_LOG, [`wfl_${randomUUID()}`, null, 'info', 'run redriven from its failed step', '{}', now, runId]);
      return (await this.one<WorkflowRunRecord>(tx, `SELECT ${R} FROM workflow_runs WHERE id = $1`, [runId]))!;
    });
  }
}
