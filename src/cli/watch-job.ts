import type { Engine } from '../jobs/engine.js';
import { jobSummary } from '../jobs/job-summary.js';
import { sleep } from '../shared/sleep.js';
import { JOB_STATUSES, TERMINAL_STATUSES, type JobStatus } from '../storage/job-states.js';
import { progressReporter } from './progress.js';
import { exitCodeFor, type RunResult } from './run-command.js';

/** How often the record is read: what `sluice run`'s bar redraws at, at a fraction of a query a second. */
const WATCH_POLL_MS = 250;

/**
 * `sluice jobs watch ID`: follows a job that some worker runs (a `sluice worker`, `sluice serve`,
 * another machine) to its end or pause, with `sluice run`'s progress bar, then its summary and exit
 * code. Runs nothing itself: watching never takes work from a worker. Ctrl-C stops watching, not
 * the job (exit 130, as `sluice run` interrupted).
 */
export async function watchJob(engine: Engine, jobId: string, progress: NodeJS.WriteStream | undefined, pollMs = WATCH_POLL_MS): Promise<RunResult> {
  const { deps } = engine;
  let job = await deps.jobs.require(jobId);
  const reporter = progress && progressReporter(progress);
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    while (!interrupted && job.status !== JOB_STATUSES.paused && !TERMINAL_STATUSES.has(job.status as JobStatus)) {
      reporter?.update(jobSummary(job));
      await sleep(pollMs);
      job = await deps.jobs.require(jobId);
    }
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  reporter?.done(jobSummary(job));
  return { summary: jobSummary(job), files: {}, exitCode: exitCodeFor(job.status) };
}
