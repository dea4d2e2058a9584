import type { EngineDeps } from './engine-deps.js';
import { purgeJobObjects } from './job-deletion.js';
import type { JobDeletion } from '../storage/store.js';

const DAY_MS = 86_400_000;

/**
 * Hourly, and once a minute after start (not at once: a fleet restarting together should not all
 * sweep while it is busiest). A pass takes at most `batch` jobs or rows, each a short statement of
 * its own, and a run at most `maxPasses` passes, so a first run over years of backlog neither holds
 * a long transaction nor keeps a process busy for long; the next run goes on where it stopped.
 */
export const RETENTION_SWEEP = { everyMs: 3_600_000, firstAfterMs: 60_000, batch: 100, maxPasses: 50 } as const;

export interface RetentionSettings {
  /** 0: nothing is deleted by age; deletions that were asked for are still finished. */
  days: number;
  batch?: number;
  maxPasses?: number;
}

export interface SweepCounts {
  /** Jobs marked deleted for `retention` in this run. */
  expired: number;
  /** Jobs whose objects were deleted in this run, expired or deleted earlier. */
  purged: number;
  /** Jobs whose objects could not all be deleted; tried again next run. */
  failed: number;
  outbox: number;
  deliveries: number;
}

/**
 * One run of the purge. Safe on every process at once: expiring a job is a conditional mark that
 * one process wins (PostgreSQL skips rows another sweep has locked), and the object deletion and
 * row purges are idempotent, so two sweeps at worst delete the same objects twice.
 */
export async function sweepRetention(deps: EngineDeps, settings: RetentionSettings): Promise<SweepCounts> {
  const batch = settings.batch ?? RETENTION_SWEEP.batch;
  const maxPasses = settings.maxPasses ?? RETENTION_SWEEP.maxPasses;
  const { retention } = deps.store;
  const counts: SweepCounts = { expired: 0, purged: 0, failed: 0, outbox: 0, deliveries: 0 };

  const purgeAll = async (deletions: JobDeletion[]): Promise<boolean> => {
    let ok = true;
    for (const deletion of deletions) {
      try {
        await purgeJobObjects(deps, deletion);
        counts.purged++;
      } catch (error: unknown) {
        counts.failed++;
        ok = false;
        deps.log.warn({ err: error, jobId: deletion.jobId }, 'job objects not deleted; the next sweep tries again');
      }
    }
    return ok;
  };

  const now = deps.clock.now();
  const before = now - settings.days * DAY_MS;
  if (settings.days > 0) {
    for (let pass = 0; pass < maxPasses; pass++) {
      const expired = await retention.expire(before, now, batch);
      counts.expired += expired.length;
      if (!(await purgeAll(expired)) || expired.length < batch) break;
    }
  }
  // Deletions a crash or a storage failure left unfinished. A failure stops the run: the same jobs
  // would come back in the next pass.
  for (let pass = 0; pass < maxPasses; pass++) {
    const unpurged = await retention.unpurged(batch);
    if (!(await purgeAll(unpurged)) || unpurged.length < batch) break;
  }
  if (settings.days > 0) {
    counts.outbox = await repeat(maxPasses, batch, () => retention.purgeOutbox(before, batch));
    counts.deliveries = await repeat(maxPasses, batch, () => retention.purgeDeliveries(before, batch));
  }
  if (Object.values(counts).some((n) => n > 0)) deps.log.info({ ...counts, retentionDays: settings.days }, 'retention sweep');
  return counts;
}

/** Runs `pass` until it takes less than a whole batch, or `maxPasses` times; the total it took. */
async function repeat(maxPasses: number, batch: number, pass: () => Promise<number>): Promise<number> {
  let total = 0;
  for (let i = 0; i < maxPasses; i++) {
    const n = await pass();
    total += n;
    if (n < batch) break;
  }
  return total;
}

/**
 * Sweeps after `firstAfterMs` and then every `everyMs`, one run at a time, until the returned
 * function is called; it resolves once a run in progress has ended, so the engine is not closed
 * under it. A failed run is logged and the next one tries again: a database blip must not stop a
 * worker or the API.
 */
export function sweepRetentionPeriodically(
  deps: EngineDeps,
  settings: RetentionSettings,
  timing: { everyMs: number; firstAfterMs: number } = RETENTION_SWEEP,
): () => Promise<void> {
  let running: Promise<void> | undefined;
  const run = (): void => {
    if (running) return;
    running = sweepRetention(deps, settings)
      .then(() => undefined)
      .catch((error: unknown) => deps.log.warn({ err: error }, 'retention sweep failed; the next one tries again'))
      .finally(() => {
        running = undefined;
      });
  };
  let interval: NodeJS.Timeout | undefined;
  const first = setTimeout(() => {
    run();
    interval = setInterval(run, timing.everyMs);
    interval.unref();
  }, timing.firstAfterMs);
  first.unref();
  return async () => {
    clearTimeout(first);
    clearInterval(interval);
    await running;
  };
}
