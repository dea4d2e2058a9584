import { randomUUID } from 'node:crypto';
import type { Clock } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { Store } from '../storage/store.js';
import type { WorkflowLogRecord, WorkflowRecord, WorkflowRunRecord } from '../storage/workflow-records.js';
import { runNotFound, workflowNotFound } from '../storage/workflow-rows.js';
import { requireSecrets } from './step-headers.js';
import { nextFire, triggerMonitor, validateDefinition, WORKFLOW_STATUSES, type WorkflowDefinition } from './definition.js';

/** A run's input is JSON on the run's row: bounded like a step's output. */
export const MAX_INPUT_CHARS = 65_536;

export interface WorkflowBody {
  name?: unknown;
  description?: unknown;
  status?: unknown;
  trigger?: unknown;
  steps?: unknown;
}

function iso(ms: number | null): string | null {
  return ms === null ? null : new Date(ms).toISOString();
}

/** Spec 2.5, with the version a run would pin. */
export function workflowView(w: WorkflowRecord) {
  return {
    id: w.id,
    name: w.name,
    description: w.description,
    status: w.status,
    trigger: JSON.parse(w.trigger) as unknown,
    steps: JSON.parse(w.steps) as unknown,
    version: w.version,
    created_at: iso(w.createdAt)!,
    updated_at: iso(w.updatedAt)!,
  };
}

/** Spec 2.6, with the pinned version and where a failed run stopped. */
export function runView(r: WorkflowRunRecord, now: number) {
  return {
    id: r.id,
    workflow_id: r.workflowId,
    workflow_name: r.workflowName,
    workflow_version: r.workflowVersion,
    status: r.status,
    steps_total: r.stepsTotal,
    steps_completed: r.stepsCompleted,
    credits_used: r.creditsUsed,
    created_at: iso(r.createdAt)!,
    started_at: iso(r.startedAt),
    completed_at: iso(r.completedAt),
    duration_ms: r.startedAt === null ? 0 : (r.completedAt ?? now) - r.startedAt,
    wake_at: iso(r.wakeAt),
    failed_step: r.failedStep,
    error: r.errorCode === null ? null : { code: r.errorCode, message: r.errorMessage ?? '' },
  };
}

/** Spec 2.7: metadata stays a string of encoded JSON. */
export function logView(l: WorkflowLogRecord) {
  return { id: l.id, workflow_id: l.workflowId, run_id: l.runId, step_id: l.stepId, level: l.level, message: l.message, metadata: l.metadata, created_at: iso(l.createdAt)! };
}

/**
 * Definitions and runs through the API: a body is checked whole (docs/workflows.md) before anything
 * is stored, webhook steps must name an active generic webhook of the account, and every update is
 * a new immutable version.
 */
export class WorkflowService {
  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
    private readonly runsInFlight: number,
  ) {}

  private async checked(accountId: string, body: WorkflowBody): Promise<{ def: WorkflowDefinition; status: string }> {
    const status = body.status ?? 'active';
    if (typeof status !== 'string' || !(WORKFLOW_STATUSES as readonly string[]).includes(status)) {
      throw new AppError(ERROR_CODES.invalidWorkflow, `status is one of ${WORKFLOW_STATUSES.join(', ')}`, { statusCode: 422 });
    }
    const def = validateDefinition(body);
    await requireSecrets(async () => new Set((await this.store.workflowSecrets.list(accountId)).map((s) => s.name)), def.steps);
    for (const step of def.steps) {
      if (step.type !== 'webhook') continue;
      const hook = await this.store.webhooks.get(step.config.webhook_id as string);
      if (!hook || hook.accountId !== accountId || hook.kind !== 'generic') {
        throw new AppError(ERROR_CODES.workflowWebhookNotFound, `step ${step.id}: no generic webhook ${String(step.config.webhook_id)} in this account`, { statusCode: 422, details: { step: step.id } });
      }
    }
    const monitorId = triggerMonitor(def.trigger);
    if (monitorId !== null && !(await this.store.monitors.get(accountId, monitorId))) {
      throw new AppError(ERROR_CODES.invalidWorkflow, `trigger.monitor_id: no monitor ${monitorId} in this account`, { statusCode: 422, details: { monitor_id: monitorId } });
    }
    return { def, status };
  }

  private write(def: WorkflowDefinition, status: string) {
    // A schedule counts from the save: a paused or draft workflow has none, and one made active
    // again starts at its next fire time, without catching up on what passed while it was not.
    const nextRunAt = status === 'active' ? nextFire(def.trigger, this.clock.now()) : null;
    return { name: def.name, description: def.description, status, trigger: JSON.stringify(def.trigger), steps: JSON.stringify(def.steps), nextRunAt, monitorId: triggerMonitor(def.trigger) };
  }

  async create(accountId: string, body: WorkflowBody): Promise<WorkflowRecord> {
    const { def, status } = await this.checked(accountId, body);
    return this.store.workflows.create({ id: `wf_${randomUUID()}`, accountId, ...this.write(def, status), now: this.clock.now() });
  }

  async get(accountId: string, id: string): Promise<WorkflowRecord> {
    const found = await this.store.workflows.get(accountId, id);
    if (!found) throw workflowNotFound(id);
    return found;
  }

  async update(accountId: string, id: string, body: WorkflowBody): Promise<WorkflowRecord> {
    await this.get(accountId, id);
    const { def, status } = await this.checked(accountId, body);
    const updated = await this.store.workflows.update(accountId, id, this.write(def, status), this.clock.now());
    if (!updated) throw workflowNotFound(id);
    return updated;
  }

  async remove(accountId: string, id: string): Promise<void> {
    if (!(await this.store.workflows.delete(accountId, id, this.clock.now()))) throw workflowNotFound(id);
  }

  async run(accountId: string, id: string, input: unknown): Promise<WorkflowRunRecord> {
    const text = JSON.stringify(input ?? {});
    if (text.length > MAX_INPUT_CHARS) throw new AppError(ERROR_CODES.invalidRequest, `a run's input is at most ${MAX_INPUT_CHARS} characters of JSON`, { statusCode: 422 });
    return this.store.workflows.startRun({ id: `wfr_${randomUUID()}`, accountId, workflowId: id, input: text, maxInFlight: this.runsInFlight, now: this.clock.now() });
  }

  async getRun(accountId: string, runId: string): Promise<WorkflowRunRecord> {
    const found = await this.store.workflows.run(accountId, runId);
    if (!found) throw runNotFound(runId);
    return found;
  }
}
