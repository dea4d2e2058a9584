import { Readable } from 'node:stream';
import { csvLine } from '../jobs/csv-writer.js';
import type { EngineDeps } from '../jobs/engine-deps.js';
import type { JobService } from '../jobs/job-service.js';
import type { JobRecord } from '../storage/job-records.js';
import type { RunClaim, TargetCursor } from '../storage/monitor-run-records.js';
import { inputCell, RUN_PIPELINES, runJobType } from './tracked-values.js';

/** The reason of a run refused at balance 0, the code a bulk upload gets then. */
export const INSUFFICIENT_CREDITS = 'insufficient_credits';

/** Targets read per store call while the input is written: memory is one page, whatever the monitor holds. */
const TARGET_PAGE = 1_000;

export interface RunDeps {
  readonly engine: EngineDeps;
  readonly jobService: JobService;
}

/**
 * The engine job of a run. Derived from the run, so that a starter that dies between creating the
 * job and recording it finds the same job when the start is taken over, instead of a second one
 * (which would look every target up, and maybe charge it, twice).
 */
export function runJobId(runId: string): string {
  return `job_${runId}`;
}

export function runInputKey(runId: string): string {
  return `inputs/${runJobId(runId)}.csv`;
}

/**
 * Starts a claimed run: its targets at this moment, in the store's target order, become a one-column
 * CSV in the object store, and that CSV an ordinary job of the type's pipeline (chunks, leases,
 * checkpoints, charge-once, resumable) with `fresh` set, so a remote provider's cached answer
 * cannot hide a change. A run of a monitor without targets completes at once, with nothing to
 * compare. Returns false when the lease was lost (another process has the run now).
 */
export async function startRun(deps: RunDeps, claim: RunClaim, signal: AbortSignal): Promise<boolean> {
  const { run, monitor, lease } = claim;
  const { engine } = deps;
  const jobId = runJobId(run.id);
  let job = await engine.jobs.get(jobId);
  if (!job && monitor.targetCount > 0 && (await engine.billing.requireAccount(run.accountId)).credits <= 0) {
    // Refused before its input is written and split (issue 27, finding 3): a run at balance 0 split
    // a million-row job only to pause it, the work and storage a bulk upload at 0 is refused (402).
    engine.log.info({ runId: run.id, monitorId: monitor.id, accountId: run.accountId }, 'monitor run refused: no credits');
    return engine.store.monitorRuns.finish({ runId: run.id, lease, status: 'failed', reason: INSUFFICIENT_CREDITS, totalRecords: 0, creditsUsed: 0, events: [], now: engine.clock.now() });
  }
  if (!job) {
    const inputKey = runInputKey(run.id);
    const written = { targets: 0 };
    await engine.objects.putStream(inputKey, Readable.from(inputLines(deps, claim, written)), { contentType: 'text/csv; charset=utf-8', signal });
    if (written.targets === 0) {
      await engine.objects.delete(inputKey);
      return engine.store.monitorRuns.finish({ runId: run.id, lease, status: 'completed', reason: null, totalRecords: 0, creditsUsed: 0, events: [], now: engine.clock.now() });
    }
    const { type, lookups } = runJobType(monitor);
    job = await createJob(deps, { jobId, inputKey, accountId: run.accountId, type, ...(lookups ? { lookups } : {}), inputName: `monitor-${monitor.id}-run-${run.id}.csv` });
  }
  const recorded = await engine.store.monitorRuns.recordJob(run.id, lease, job.id, job.totalRows ?? monitor.targetCount);
  if (recorded) engine.log.info({ runId: run.id, monitorId: monitor.id, accountId: run.accountId, jobId: job.id }, 'monitor run started');
  return recorded;
}

async function* inputLines(deps: RunDeps, claim: RunClaim, written: { targets: number }): AsyncGenerator<string> {
  const { monitor } = claim;
  yield csvLine([RUN_PIPELINES[monitor.type].keyHeader]);
  // The monitor's order, which is the list's (issue 33): the job's rows, and so the snapshot's seq, the
  // results and their CSV download, follow it.
  let after: TargetCursor | null = null;
  for (;;) {
    const page = await deps.engine.store.monitorRuns.targetPage(monitor.id, after, TARGET_PAGE);
    if (page.length === 0) return;
    written.targets += page.length;
    yield page.map((t) => csvLine([inputCell(monitor.type, t.target)])).join('');
    after = page[page.length - 1]!;
  }
}

/** `JobService.create`, or the job a racing starter (one whose lease ran out under it) made first. */
async function createJob(deps: RunDeps, input: { jobId: string; inputKey: string; accountId: string; type: string; lookups?: { type: string }[]; inputName: string }): Promise<JobRecord> {
  const { lookups, ...rest } = input;
  try {
    return await deps.jobService.create({ ...rest, options: { fresh: true, ...(lookups ? { lookups } : {}) } });
  } catch (error) {
    const made = await deps.engine.jobs.get(input.jobId);
    if (made) return made;
    throw error;
  }
}
