import { randomUUID } from 'node:crypto';
import { driveUntilStopped } from '../shared/periodic.js';
import type { EngineDeps } from '../jobs/engine-deps.js';
import type { Clock } from '../shared/clock.js';
import { ERROR_CODES, toAppError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { StepCommit, WorkflowRunClaim, WorkflowRunStatus } from '../storage/workflow-records.js';
import type { StepDefinition } from './definition.js';
import { executeStep, MAX_OUTPUT_CHARS, type RunData, type StepDeps, type StepOutcome } from './step-executor.js';

export interface RunDriverDeps extends StepDeps {
  readonly clock: Clock;
  readonly log: Logger;
  readonly leaseMs: number;
  /** Executions of one step that may fail retryably before the run fails (default 3). */
  readonly maxAttempts?: number;
  /** Backoff before a retry, doubled per attempt (default 1 s). */
  readonly retryBackoffMs?: number;
}

type LogLine = StepCommit['logs'][number];

function logLine(stepId: string | null, level: 'info' | 'warn' | 'error', message: string, metadata: Record<string, unknown>): LogLine {
  return { id: `wfl_${randomUUID()}`, stepId, level, message, metadata: JSON.stringify(metadata) };
}

/**
 * Executes workflow runs (docs/workflows.md): claims a due run under a lease, then executes its
 * steps one at a time, each ending in ONE fenced store commit of its output, charge, delivery,
 * logs, cursor and counters. A crash between a step's work and its commit leaves the cursor where
 * it was, so the step executes again: a lookup may be asked twice, but its charge has a ledger id
 * per (run, step) and the commit that writes it is the one that moves the cursor. A waiting delay
 * releases the lease and its run is claimed again when due; no worker waits for it.
 */
export class WorkflowRunDriver {
  constructor(
    private readonly deps: RunDriverDeps,
    private readonly owner: string,
  ) {}

  /** Executes one due run as far as it can go now; false when no run was due. */
  async tick(signal: AbortSignal = new AbortController().signal): Promise<boolean> {
    const { store, clock } = this.deps;
    const claim = await store.workflows.claimRun(this.owner, clock.now(), this.deps.leaseMs);
    if (!claim) return false;
    const controller = new AbortController();
    const onStop = () => controller.abort();
    signal.addEventListener('abort', onStop, { once: true });
    const beat = setInterval(() => {
      store.workflows
        .renewLease(claim.run.id, claim.lease, clock.now() + this.deps.leaseMs)
        .then((held) => {
          if (!held) controller.abort();
        })
        .catch(() => undefined);
    }, Math.max(50, Math.floor(this.deps.leaseMs / 3)));
    try {
      await this.advance(claim, controller.signal);
    } catch (e: unknown) {
      this.deps.log.warn({ err: toAppError(e), runId: claim.run.id, owner: this.owner }, 'workflow run step failed; it is taken up again when its lease runs out');
    } finally {
      clearInterval(beat);
      signal.removeEventListener('abort', onStop);
    }
    return true;
  }

  private async advance(claim: WorkflowRunClaim, signal: AbortSignal): Promise<void> {
    const { store, clock } = this.deps;
    const { run, lease } = claim;
    const steps = JSON.parse(claim.steps) as StepDefinition[];
    const stepIds = steps.map((s) => s.id);
    const outputs = JSON.parse(run.outputs) as Record<string, unknown>;
    let cursor = run.cursor;
    let attempts = run.attempts;
    let wakeAt = run.wakeAt;
    let completed = run.stepsCompleted;
    const maxAttempts = this.deps.maxAttempts ?? 3;
    const backoff = this.deps.retryBackoffMs ?? 1000;
    while (cursor < steps.length && !signal.aborted) {
      const step = steps[cursor]!;
      const data: RunData = { input: JSON.parse(run.input) as unknown, steps: Object.fromEntries(Object.entries(outputs).map(([id, output]) => [id, { output }])) };
      const started = clock.now();
      let outcome: StepOutcome = await executeStep(this.deps, { accountId: run.accountId, runId: run.id, workflowId: run.workflowId, wakeAt, now: started, signal, stepIds }, step, data);
      if (signal.aborted) return;
      const now = clock.now();
      if (outcome.kind === 'done' && JSON.stringify(outcome.output ?? null).length > MAX_OUTPUT_CHARS) {
        outcome = { kind: 'fail', code: ERROR_CODES.expressionBudgetExceeded, message: `step ${step.id}: its output is longer than ${MAX_OUTPUT_CHARS} characters` };
      }
      if (outcome.kind === 'retry' && attempts + 1 >= maxAttempts) outcome = { kind: 'fail', code: outcome.code, message: `${outcome.message} (after ${attempts + 1} attempts)` };
      const base = { runId: run.id, accountId: run.accountId, lease, cursor, now, leaseUntil: now + this.deps.leaseMs };
      let commit: StepCommit;
      let next = cursor;
      let status: WorkflowRunStatus = 'running';
      // A finished step's commit, with or without its charge (a key paid for meanwhile is free).
      const doneCommit = (done: Extract<StepOutcome, { kind: 'done' }>, charge: typeof done.charge): StepCommit => {
        const logs = [logLine(step.id, 'info', `step ${step.id} (${step.type}) completed`, { type: step.type, credits: charge?.amount ?? 0, duration_ms: now - started })];
        if (status === 'completed') logs.push(logLine(null, 'info', 'run completed', { steps_completed: completed + 1 }));
        return {
          ...base,
          next: { cursor: next, status, attempts: 0, wakeAt: null, outputs: JSON.stringify(outputs), stepsCompleted: completed + 1 },
          ...(charge ? { charge } : {}),
          ...(done.cache ? { cache: [done.cache] } : {}),
          ...(done.delivery ? { delivery: done.delivery } : {}),
          logs,
          ...(status === 'completed' ? { leaseUntil: 0 } : {}),
        };
      };
      if (outcome.kind === 'done') {
        outputs[step.id] = outcome.output ?? null;
        next = outcome.jump ?? cursor + 1;
        status = next >= steps.length ? 'completed' : 'running';
        commit = doneCommit(outcome, outcome.charge);
      } else if (outcome.kind === 'wait') {
        commit = {
          ...base,
          next: { cursor, status, attempts, wakeAt: outcome.wakeAt, stepsCompleted: completed },
          logs: [logLine(step.id, 'info', `step ${step.id} waits until ${new Date(outcome.wakeAt).toISOString()}`, { wake_at: new Date(outcome.wakeAt).toISOString() })],
          // Released until its wake time: what the claim's due order reads.
          leaseUntil: outcome.wakeAt,
        };
      } else if (outcome.kind === 'retry') {
        const retryAt = now + backoff * 2 ** attempts;
        commit = {
          ...base,
          next: { cursor, status, attempts: attempts + 1, wakeAt: retryAt, stepsCompleted: completed },
          logs: [logLine(step.id, 'warn', `step ${step.id} failed and is tried again: ${outcome.message}`, { code: outcome.code, attempt: attempts + 1 })],
          leaseUntil: retryAt,
        };
      } else {
        status = 'failed';
        commit = {
          ...base,
          next: { cursor, status, attempts, wakeAt: null, stepsCompleted: completed, error: { code: outcome.code, message: outcome.message, step: step.id } },
          logs: [logLine(step.id, 'error', `step ${step.id} failed: ${outcome.message}`, { code: outcome.code })],
          leaseUntil: 0,
        };
      }
      let result = await store.workflows.commitStep(commit);
      if (result === 'billed' && outcome.kind === 'done') {
        // Another run, job or single lookup paid for the key between the check and the commit.
        result = await store.workflows.commitStep(doneCommit(outcome, undefined));
      }
      if (result === 'insufficient_credits') {
        // The balance went between the check and the commit: the step fails, uncharged, redrivable.
        result = await store.workflows.commitStep({
          ...base,
          next: { cursor, status: 'failed', attempts, wakeAt: null, stepsCompleted: completed, error: { code: ERROR_CODES.insufficientCredits, message: 'the account has no credits left', step: step.id } },
          logs: [logLine(step.id, 'error', `step ${step.id} failed: the account has no credits left`, { code: ERROR_CODES.insufficientCredits })],
          leaseUntil: 0,
        });
        return;
      }
      if (result === 'lease_lost') {
        this.deps.log.info({ runId: run.id, step: step.id, owner: this.owner }, 'workflow run lease lost (cancelled or taken over); nothing committed');
        return;
      }
      if (outcome.kind !== 'done' || status !== 'running') return;
      cursor = next;
      completed += 1;
      attempts = 0;
      wakeAt = null;
    }
  }
}

/** Drives workflow runs from this process until the returned function is called (see driveUntilStopped). */
export function driveWorkflowRuns(deps: RunDriverDeps, owner: string, pollMs: number): () => Promise<void> {
  const driver = new WorkflowRunDriver(deps, owner);
  return driveUntilStopped((signal) => driver.tick(signal), pollMs, (e) => deps.log.warn({ err: toAppError(e) }, 'could not look for workflow runs; trying again'));
}

/** The driver's dependencies from the engine's: its store, lookups, clock, log and lease length. */
export function workflowDriverDeps(engine: EngineDeps): RunDriverDeps {
  return {
    store: engine.store,
    providers: engine.providers,
    limiters: engine.limiters,
    clock: engine.clock,
    log: engine.log,
    leaseMs: engine.limits.leaseSeconds * 1000,
    repeatFreeDays: engine.repeatFreeDays,
  };
}
