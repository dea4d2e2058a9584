import { createHash } from 'node:crypto';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { tickPeriodically } from '../shared/periodic.js';
import type { Store } from '../storage/store.js';
import type { DueMonitorEvent } from '../storage/workflow-records.js';
import type { TriggerDefinition } from './definition.js';
import { nextFire } from './definition.js';
import { MAX_INPUT_CHARS } from './workflow-service.js';

/** Workflows fired per store read: a burst of due schedules is taken a page at a time. */
const FIRE_BATCH = 100;
/** Cron fields are minutes: a look every 15 s starts a run at most 15 s after its time. */
export const WORKFLOW_SCHEDULER_TICK_MS = 15_000;

export interface WorkflowSchedulerDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly log: Logger;
  readonly runsInFlight: number;
}

/** A scheduled run's id: a pure function of (workflow, due time), so one due time is one run. */
export function scheduledRunId(workflowId: string, dueAt: number): string {
  return `wfr_${createHash('sha256').update(`${workflowId}\0schedule\0${dueAt}`).digest('hex').slice(0, 32)}`;
}

/**
 * Queues a run for every scheduled workflow whose time has come, as the monitors' schedule does:
 * any number of processes may call this over one store (fireSchedule is a compare-and-set on the
 * due time read, and the run's id is derived from it), and a workflow whose fire times passed
 * while every process was down gets ONE run when the first comes back, then its next time after
 * now. Returns the runs this call queued.
 */
export async function fireDueSchedules(deps: WorkflowSchedulerDeps): Promise<string[]> {
  const started: string[] = [];
  for (;;) {
    const now = deps.clock.now();
    const due = await deps.store.workflows.dueSchedules(now, FIRE_BATCH);
    for (const wf of due) {
      const trigger = JSON.parse(wf.trigger) as TriggerDefinition;
      const runId = scheduledRunId(wf.id, wf.nextRunAt);
      const input = JSON.stringify({ scheduled_at: new Date(wf.nextRunAt).toISOString() });
      const result = await deps.store.workflows.fireSchedule({ workflowId: wf.id, dueAt: wf.nextRunAt, nextAt: nextFire(trigger, now), runId, input, maxInFlight: deps.runsInFlight, now });
      if (result === 'started') {
        started.push(runId);
        deps.log.info({ runId, workflowId: wf.id, accountId: wf.accountId, dueAt: wf.nextRunAt }, 'workflow run queued by its schedule');
      } else if (result === 'limited') {
        deps.log.warn({ workflowId: wf.id, accountId: wf.accountId, dueAt: wf.nextRunAt }, 'scheduled workflow run skipped: the account is at its runs-in-flight limit');
      }
    }
    if (due.length < FIRE_BATCH) return started;
  }
}

/** A monitor event's run id: a pure function of (workflow, monitor run), so one event is one run. */
export function monitorEventRunId(workflowId: string, monitorRunId: string): string {
  return `wfr_${createHash('sha256').update(`${workflowId}\0monitor_event\0${monitorRunId}`).digest('hex').slice(0, 32)}`;
}

/** Changed targets put in a monitor event run's input, at most; the rest is counted, and read from the monitor run. */
export const MAX_EVENT_CHANGES = 100;

/**
 * A monitor event run's input: the monitor run, and its changed targets (each with its changed
 * fields, old and new) up to MAX_EVENT_CHANGES and the run input's size limit.
 */
async function monitorEventInput(store: Store, e: DueMonitorEvent): Promise<string> {
  const { snapshots, total } = await store.monitorResults.snapshots(e.accountId, e.monitorRunId, { changesOnly: true, limit: MAX_EVENT_CHANGES, offset: 0 });
  const input = {
    event: 'monitor.run.completed',
    monitor_id: e.monitorId,
    monitor_run_id: e.monitorRunId,
    finished_at: new Date(e.finishedAt).toISOString(),
    changes_detected: total,
    changes: snapshots.map((s) => ({ target: s.target, changes: s.changes })),
    changes_truncated: false,
  };
  let text = JSON.stringify(input);
  while (text.length > MAX_INPUT_CHARS && input.changes.length > 0) {
    input.changes = input.changes.slice(0, Math.floor(input.changes.length / 2));
    input.changes_truncated = true;
    text = JSON.stringify(input);
  }
  input.changes_truncated ||= input.changes.length < total;
  return JSON.stringify(input);
}

/**
 * Queues a run for every completed monitor run with changes that an active monitor_event workflow
 * has not taken up, oldest first. As the schedule: any number of processes may call this at once
 * (the workflow's event cursor moves by compare-and-set, and the run's id is derived from the
 * monitor run), and events that came while every process was down are taken up when the first
 * comes back. An event that finds the account at its runs-in-flight limit passes without a run.
 */
export async function fireMonitorEvents(deps: WorkflowSchedulerDeps): Promise<string[]> {
  const started: string[] = [];
  for (;;) {
    const due = await deps.store.workflows.dueMonitorEvents(FIRE_BATCH);
    for (const e of due) {
      const runId = monitorEventRunId(e.workflowId, e.monitorRunId);
      const input = await monitorEventInput(deps.store, e);
      const result = await deps.store.workflows.fireMonitorEvent({ workflowId: e.workflowId, finishedAt: e.finishedAt, runId, input, maxInFlight: deps.runsInFlight, now: deps.clock.now() });
      if (result === 'started') {
        started.push(runId);
        deps.log.info({ runId, workflowId: e.workflowId, accountId: e.accountId, monitorRunId: e.monitorRunId }, 'workflow run queued by a monitor event');
      } else if (result === 'limited') {
        deps.log.warn({ workflowId: e.workflowId, accountId: e.accountId, monitorRunId: e.monitorRunId }, 'monitor event workflow run skipped: the account is at its runs-in-flight limit');
      }
    }
    if (due.length < FIRE_BATCH) return started;
  }
}

/** Ticks fireDueSchedules now and every `everyMs` until the returned function is called (see tickPeriodically). */
export function scheduleWorkflowsPeriodically(deps: WorkflowSchedulerDeps, everyMs = WORKFLOW_SCHEDULER_TICK_MS): () => Promise<void> {
  return tickPeriodically(async () => [...(await fireDueSchedules(deps)), ...(await fireMonitorEvents(deps))], everyMs, (error) => deps.log.warn({ err: error }, 'workflow schedule tick failed; the next one tries again'));
}
