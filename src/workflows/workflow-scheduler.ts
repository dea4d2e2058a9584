import { createHash } from 'node:crypto';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { tickPeriodically } from '../shared/periodic.js';
import type { Store } from '../storage/store.js';
import type { TriggerDefinition } from './definition.js';
import { nextFire } from './definition.js';

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

/** Ticks fireDueSchedules now and every `everyMs` until the returned function is called (see tickPeriodically). */
export function scheduleWorkflowsPeriodically(deps: WorkflowSchedulerDeps, everyMs = WORKFLOW_SCHEDULER_TICK_MS): () => Promise<void> {
  return tickPeriodically(() => fireDueSchedules(deps), everyMs, (error) => deps.log.warn({ err: error }, 'workflow schedule tick failed; the next one tries again'));
}
