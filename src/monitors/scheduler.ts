import type { Clock } from '../shared/clock.js';
import { tickPeriodically } from '../shared/periodic.js';
import type { Logger } from '../shared/logger.js';
import type { MonitorRunRecord } from '../storage/monitor-records.js';
import type { MonitorsPort } from '../storage/store.js';

/** Monitors claimed per store call: one transaction stays short however many fall due together. */
const CLAIM_BATCH = 100;
/** How often a process asks whether a monitor is due. Periods are a week or longer: a minute late is on time. */
export const SCHEDULER_TICK_MS = 30_000;

/**
 * Records a queued run for every monitor whose period has come. Any number of processes may run
 * one over a shared store: `claimDueRuns` makes exactly one run per monitor and period, so this
 * needs no leader. A missed period (every process was down) gets one run when the first comes back.
 */
export async function scheduleDueRuns(deps: { monitors: MonitorsPort; clock: Clock; log: Logger }): Promise<MonitorRunRecord[]> {
  const made: MonitorRunRecord[] = [];
  for (;;) {
    const runs = await deps.monitors.claimDueRuns(deps.clock.now(), CLAIM_BATCH);
    for (const run of runs) deps.log.info({ runId: run.id, monitorId: run.monitorId, accountId: run.accountId, periodStart: run.periodStart }, 'monitor run queued by the schedule');
    made.push(...runs);
    if (runs.length < CLAIM_BATCH) return made;
  }
}

/**
 * Ticks `scheduleDueRuns` at once and then every `everyMs`, one tick at a time, until the returned
 * function is called; it resolves once a tick in progress has ended, so the store is not closed
 * under it. A failed tick is logged and the next one tries again: a database blip must not stop
 * the worker or the API that hosts the scheduler.
 */
export function scheduleMonitorsPeriodically(deps: { monitors: MonitorsPort; clock: Clock; log: Logger }, everyMs = SCHEDULER_TICK_MS): () => Promise<void> {
  return tickPeriodically(() => scheduleDueRuns(deps), everyMs, (error) => deps.log.warn({ err: error }, 'monitor schedule tick failed; the next one tries again'));
}
