import { driveUntilStopped } from '../shared/periodic.js';
import { toAppError } from '../shared/errors.js';
import { JOB_STATUSES } from '../storage/job-states.js';
import type { RunClaim } from '../storage/monitor-run-records.js';
import type { HighValueAlert } from './high-value.js';
import { compareRun } from './run-comparison.js';
import { highValueEvent, MAX_ALERTS_PER_EVENT, runCompletedEvent, writeChangesFile } from './run-events.js';
import { runJobId, startRun, type RunDeps } from './run-starter.js';

/**
 * Moves monitor runs along on the engine: starts queued runs (their job), and once a run's job has
 * ended, compares its results and ends the run with its events. Each step is leased on the run's
 * row and renewed while it works, so any number of processes can drive runs over one store; a
 * process that dies loses its step when the lease runs out, and another takes it up where the
 * store says it stopped.
 */
export class MonitorRunDriver {
  constructor(
    private readonly deps: RunDeps,
    private readonly owner: string,
  ) {}

  private get leaseMs(): number {
    return this.deps.engine.limits.leaseSeconds * 1000;
  }

  /** One step, if one is waiting; false when there was none. */
  async tick(signal: AbortSignal = new AbortController().signal): Promise<boolean> {
    const { store, clock } = this.deps.engine;
    const start = await store.monitorRuns.claimStart(this.owner, clock.now(), this.leaseMs);
    if (start) {
      await this.leased(start, async (s) => {
        await startRun(this.deps, start, s);
        this.deps.engine.metrics.monitorRunsStarted.inc();
      }, signal);
      return true;
    }
    const compare = await store.monitorRuns.claimCompare(this.owner, clock.now(), this.leaseMs);
    if (compare) {
      await this.leased(compare, (s) => this.endRun(compare, s), signal);
      return true;
    }
    return false;
  }

  /**
   * Runs `work` while a heartbeat renews the lease at a third of its length. A lost lease aborts the
   * work; any failure is logged and left to the lease: once it runs out, a process tries again.
   */
  private async leased(claim: RunClaim, work: (signal: AbortSignal) => Promise<unknown>, outer: AbortSignal): Promise<void> {
    const { engine } = this.deps;
    const { run, lease } = claim;
    const controller = new AbortController();
    const onStop = () => controller.abort();
    outer.addEventListener('abort', onStop, { once: true });
    const beat = setInterval(() => {
      engine.store.monitorRuns
        .renewLease(run.id, lease, engine.clock.now() + this.leaseMs)
        .then((held) => {
          if (!held) controller.abort();
        })
        .catch(() => undefined);
    }, Math.max(50, Math.floor(this.leaseMs / 3)));
    try {
      await work(controller.signal);
    } catch (e: unknown) {
      const error = toAppError(e);
      engine.log.warn({ err: error, runId: run.id, monitorId: run.monitorId, owner: this.owner }, 'monitor run step failed; it is taken up again when its lease runs out');
    } finally {
      clearInterval(beat);
      outer.removeEventListener('abort', onStop);
    }
  }

  /**
   * A run whose job ended: a failed or cancelled job fails or cancels the run (no comparison, no
   * event); a completed one is compared, its changes file written, and the run completed with its
   * stats and events in one store operation.
   */
  private async endRun(claim: RunClaim, signal: AbortSignal): Promise<void> {
    const { engine } = this.deps;
    const { run, monitor, lease } = claim;
    const job = await engine.jobs.require(run.jobId ?? runJobId(run.id));
    const ending = { runId: run.id, lease, totalRecords: job.totalRows ?? 0, creditsUsed: job.creditsUsed };
    if (job.status !== JOB_STATUSES.completed) {
      const status = job.status === JOB_STATUSES.cancelled ? 'cancelled' : 'failed';
      const reason = job.errorMessage ?? job.reason ?? `the run's job ${job.id} ${job.status}`;
      if (await engine.store.monitorRuns.finish({ ...ending, status, reason, events: [], now: engine.clock.now() })) {
        engine.metrics.monitorRunsEnded.inc({ outcome: status });
        engine.log.warn({ runId: run.id, monitorId: monitor.id, jobId: job.id, status, reason }, 'monitor run ended without a comparison');
      }
      return;
    }
    const totals = await compareRun(this.deps, claim, job, this.leaseMs, signal);
    if (totals.changes > 0) await writeChangesFile(engine.objects, engine.store.monitorRuns, monitor.id, run.id, signal);
    const now = engine.clock.now();
    const startedAt = run.startedAt ?? run.createdAt;
    const stats = { total_records: ending.totalRecords, changes_detected: totals.changes, credits_used: ending.creditsUsed, duration_ms: now - startedAt, alerts: totals.alerts };
    const events = [];
    if (totals.changes > 0) events.push(runCompletedEvent(monitor, run, stats, startedAt, now));
    if (totals.alerts > 0) {
      const alerts = (await engine.store.monitorRuns.alertSnapshots(run.id, MAX_ALERTS_PER_EVENT)).map((s) => JSON.parse(s.alert!) as HighValueAlert);
      events.push(highValueEvent(monitor, run, alerts, totals.alerts, now));
    }
    if (await engine.store.monitorRuns.finish({ ...ending, status: 'completed', reason: null, events, now })) {
      engine.metrics.monitorRunsEnded.inc({ outcome: 'completed' });
      engine.metrics.monitorChanges.inc(totals.changes);
      engine.log.info({ runId: run.id, monitorId: monitor.id, accountId: run.accountId, ...stats }, 'monitor run completed');
    }
  }
}

/**
 * Drives runs from this process until the returned function is called: steps back to back while
 * there are some, else a look every `pollMs`. It resolves once the step in progress has ended, so
 * the store is not closed under it. A failed claim (a database blip) is logged and tried again.
 */
export function driveMonitorRuns(deps: RunDeps, owner: string, pollMs: number): () => Promise<void> {
  const driver = new MonitorRunDriver(deps, owner);
  return driveUntilStopped((signal) => driver.tick(signal), pollMs, (e) => deps.engine.log.warn({ err: toAppError(e) }, 'could not look for monitor runs; trying again'));
}
