import { randomUUID } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, ERROR_CODES, isAppError, toAppError } from '../shared/errors.js';
import { assembleJob } from './assemble-job.js';
import { ownerDead } from './job-activity.js';
import type { EngineDeps } from './engine-deps.js';
import { FILE_ERROR_CODES } from './file-errors.js';
import { JOB_PHASES, JOB_STATUSES, PAUSE_REASONS } from '../storage/job-states.js';
import { processChunk } from './process-chunk.js';
import { splitJob } from './split-job.js';

/** A chunk or phase that fails this many times in a row on retryable errors pauses its job. */
export const MAX_FAILURES = 8;
const BASE_BACKOFF_MS = 500;

export interface WorkerOptions {
  concurrency: number;
  /** Stops the loops (after their current batch) once this returns true. */
  until?: () => boolean | Promise<boolean>;
}

/**
 * Takes work from the shared database: a job to split or assemble, else a chunk to process, each
 * under a lease that a heartbeat renews. Any number of workers, in any number of processes, can run
 * against one data dir; the leases keep them off each other's work.
 */
export class Worker {
  readonly id = `${os.hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
  private readonly stopController = new AbortController();

  constructor(private readonly deps: EngineDeps) {}

  /** Finishes the batches in flight, releases leases and resolves when every loop has ended. */
  stop(): void {
    this.stopController.abort();
  }

  async run(options: WorkerOptions): Promise<void> {
    await this.freeDeadWorkersLeases();
    const loops = Array.from({ length: options.concurrency }, () => this.loop(options.until ?? (() => false)));
    await Promise.all(loops);
  }

  private async loop(until: () => boolean | Promise<boolean>): Promise<void> {
    const stop = this.stopController.signal;
    while (!stop.aborted && !(await until())) {
      let worked = false;
      try {
        worked = await this.tick();
      } catch (e: unknown) {
        // The database locked past its busy time-out by another process: wait and look again, as
        // for any retryable fault. Anything else is a bug and ends the worker loudly.
        const error = toAppError(e);
        if (!error.retryable) throw e;
        this.deps.log.warn({ err: error }, 'worker could not reach the database; trying again');
      }
      if (!worked && !stop.aborted && !(await until())) await sleep(this.deps.limits.pollMs, undefined, { signal: stop }).catch(() => undefined);
    }
  }

  /** Does one unit of work if there is one; false when there was nothing to do. */
  async tick(): Promise<boolean> {
    const { jobs, clock } = this.deps;
    const leaseMs = this.deps.limits.leaseSeconds * 1000;
    const phase = await jobs.acquireJobPhase(this.id, clock.now(), leaseMs, this.deps.limits.accountRunningJobs);
    if (phase) {
      const { job, lease } = phase;
      if (this.tookOver(phase.previousOwner)) {
        this.deps.log.info({ jobId: job.id, accountId: job.accountId, phase: job.phase, previousOwner: phase.previousOwner, owner: this.id, leaseEpoch: lease.epoch }, 'lease taken over');
      }
      await this.leased(
        job.id,
        (expires) => jobs.renewJobLease(job.id, lease, expires),
        () => jobs.releaseJobLease(job.id, lease),
        async (signal) => {
          if (job.phase === JOB_PHASES.split) {
            this.deps.log.info({ jobId: job.id, accountId: job.accountId, worker: this.id, leaseEpoch: lease.epoch }, 'job started');
            await splitJob(this.deps, job, lease, signal);
          } else await assembleJob(this.deps, job, lease, signal);
          await jobs.clearPhaseFailures(job.id);
        },
        (retryAt) => jobs.recordFailure({ jobId: job.id }, lease, retryAt),
      );
      return true;
    }
    const taken = await jobs.acquireChunk(this.id, clock.now(), leaseMs);
    if (taken) {
      const { chunk, lease } = taken;
      await this.leased(
        chunk.jobId,
        (expires) => jobs.renewChunkLease(chunk.jobId, chunk.chunkIndex, lease, expires),
        () => jobs.releaseChunkLease(chunk.jobId, chunk.chunkIndex, lease),
        async (signal) => {
          // A chunk holds no account id: one read, only on a takeover, inside the leased work so
          // that a database fault here is retried like any other instead of stranding the lease.
          if (this.tookOver(taken.previousOwner)) {
            const { accountId } = await jobs.require(chunk.jobId);
            this.deps.log.info({ jobId: chunk.jobId, accountId, chunk: chunk.chunkIndex, previousOwner: taken.previousOwner, owner: this.id, leaseEpoch: lease.epoch }, 'lease taken over');
          }
          await processChunk(this.deps, chunk, lease, signal, this.stopController.signal);
        },
        (retryAt) => jobs.recordFailure({ jobId: chunk.jobId, chunkIndex: chunk.chunkIndex }, lease, retryAt),
      );
      return true;
    }
    return (await this.freeDeadWorkersLeases()) || (await this.retryProviderPauses());
  }

  /**
   * Whether a claim took work whose owner's lease ran out unreleased (the owner died, froze or lost
   * the database): it gets an info line, else an operator has nothing to match the loser's `lease
   * lost` line to. A worker taking back its own lease (its backoff after a retryable failure ran
   * out) is no takeover.
   */
  private tookOver(previousOwner: string | undefined): previousOwner is string {
    return previousOwner !== undefined && previousOwner !== this.id;
  }

  /**
   * Frees the leases of worker processes on this machine that have died (killed, crashed), so that
   * a restart goes on with their chunks at once instead of when the leases run out. A lease owner is
   * `host:pid:random`; one of another host, or of a process that is alive, is left to run out.
   * Should a process in another PID namespace share the host name and the data dir, its leases may
   * be freed while it lives: its epoch-fenced commits are then refused, and nothing is doubled.
   */
  private async freeDeadWorkersLeases(): Promise<boolean> {
    const { jobs, clock, log } = this.deps;
    let freed = 0;
    for (const owner of await jobs.liveLeaseOwners(clock.now())) {
      if (!ownerDead(owner)) continue;
      const n = await jobs.freeLeasesOf(owner);
      if (n > 0) log.warn({ owner, leases: n }, 'freed the leases of a worker process that has died');
      freed += n;
    }
    return freed > 0;
  }

  /** Jobs paused because their provider was down go on after the wait; the next batch probes it. */
  private async retryProviderPauses(): Promise<boolean> {
    const { jobs, clock, log } = this.deps;
    const now = clock.now();
    let resumed = false;
    for (const jobId of await jobs.pausedSince(PAUSE_REASONS.providerUnavailable, now - this.deps.limits.providerRetrySeconds * 1000)) {
      const job = await jobs.transitionFrom(JOB_STATUSES.paused, jobId, JOB_STATUSES.running, { now });
      if (job) {
        log.info({ jobId, accountId: job.accountId }, 'job resumed: retrying a job paused for its lookup provider');
        resumed = true;
      }
    }
    return resumed;
  }

  /**
   * Runs leased work with a heartbeat. Losing the lease aborts the work (its commits are fenced
   * anyway). A retryable failure keeps the lease until a growing backoff has passed; after
   * MAX_FAILURES in a row the job pauses with the error's code. Any other failure fails the job.
   */
  private async leased(
    jobId: string,
    renew: (expiresAt: number) => Promise<boolean>,
    release: () => Promise<void>,
    work: (signal: AbortSignal) => Promise<void>,
    recordFailure: (retryAt: number) => Promise<number>,
  ): Promise<void> {
    const { clock, log } = this.deps;
    const leaseMs = this.deps.limits.leaseSeconds * 1000;
    const controller = new AbortController();
    // Every lookup request in flight listens on this signal (64 and more with a remote provider);
    // they remove their listeners when done, so Node's leak warning at 11 would be a false alarm.
    setMaxListeners(0, controller.signal);
    let renewing = false;
    const heartbeat = setInterval(() => {
      // One renewal at a time: a slow database must not pile them up.
      if (renewing) return;
      renewing = true;
      // A renewal that meets a locked database is skipped; the next one tries again before expiry.
      void retrySafe(() => renew(clock.now() + leaseMs), log, jobId)
        .then((renewed) => {
          if (renewed === false) controller.abort(new AppError(ERROR_CODES.leaseLost, 'lease lost'));
        })
        .catch((e: unknown) => controller.abort(toAppError(e)))
        .finally(() => {
          renewing = false;
        });
    }, Math.max(100, leaseMs / 3));
    try {
      await work(controller.signal);
      clearInterval(heartbeat);
      await retrySafe(release, log, jobId);
    } catch (e: unknown) {
      const error = toAppError(controller.signal.aborted && isAppError(controller.signal.reason) ? controller.signal.reason : e);
      clearInterval(heartbeat);
      // Recording the failure needs the database too; if it is still locked, the lease simply runs
      // out and the work is taken again, which is the same retry by another road.
      await retrySafe(() => this.afterFailure(jobId, error, { renew, release, recordFailure }), log, jobId);
    } finally {
      clearInterval(heartbeat);
    }
  }

  private async afterFailure(
    jobId: string,
    error: AppError,
    lease: { renew: (expiresAt: number) => Promise<boolean>; release: () => Promise<void>; recordFailure: (retryAt: number) => Promise<number> },
  ): Promise<void> {
    const { clock, log } = this.deps;
    if (error.code === ERROR_CODES.leaseLost) {
      log.warn({ jobId }, 'lease lost; another worker has the work');
      return;
    }
    if (!error.retryable) {
      await lease.release();
      await this.endJob(jobId, error);
      return;
    }
    const failures = await lease.recordFailure(clock.now() + BASE_BACKOFF_MS);
    if (failures === 0) return; // the lease went to another worker meanwhile
    if (failures >= MAX_FAILURES) {
      await lease.release();
      await this.endJob(jobId, error);
      return;
    }
    // The lease now runs until the backoff is over; then any worker may take the work again.
    const backoffMs = Math.min(60_000, BASE_BACKOFF_MS * 2 ** (failures - 1));
    await lease.renew(clock.now() + backoffMs);
    log.warn({ jobId, err: error, failures, backoffMs }, 'retryable failure; will try again');
  }

  /** Pauses or fails the job; the store releases its reservations and queues a failure's event. */
  private async endJob(jobId: string, error: AppError): Promise<void> {
    const { jobs, clock, log } = this.deps;
    const now = clock.now();
    if (error.retryable) {
      const paused = await jobs.transitionFrom(JOB_STATUSES.running, jobId, JOB_STATUSES.paused, { reason: error.code, message: error.message, now });
      if (paused) log.warn({ jobId, accountId: paused.accountId, reason: error.code, err: error }, 'job paused after repeated failures');
    } else {
      const reason = isInputError(error) ? error.code : ERROR_CODES.internal;
      const failed = await jobs.transitionFrom(JOB_STATUSES.running, jobId, JOB_STATUSES.failed, { reason, message: error.message, now });
      if (!failed) return;
      // A caller's bad file is an outcome, not a fault of ours: no stack, no error level.
      if (reason === ERROR_CODES.internal) log.error({ jobId, accountId: failed.accountId, reason, err: error }, 'job failed');
      else log.info({ jobId, accountId: failed.accountId, reason, message: error.message }, 'job failed: it rejected its input');
    }
  }
}

/**
 * Runs lease bookkeeping that a locked database may refuse. A retryable refusal is logged and
 * answered with undefined (the lease then runs out on its own); anything else is thrown.
 */
async function retrySafe<T>(step: () => Promise<T>, log: EngineDeps['log'], jobId: string): Promise<T | undefined> {
  try {
    return await step();
  } catch (e: unknown) {
    const error = toAppError(e);
    if (!error.retryable) throw e;
    log.warn({ jobId, err: error }, 'lease bookkeeping met a locked database; the lease will run out instead');
    return undefined;
  }
}

/** Failures that describe the caller's file rather than a fault of ours. */
function isInputError(error: AppError): boolean {
  return INPUT_ERRORS.has(error.code);
}

const INPUT_ERRORS: ReadonlySet<string> = new Set([...FILE_ERROR_CODES, ERROR_CODES.unknownJobType]);
