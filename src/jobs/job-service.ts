import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { jobLookups } from '../../pipelines/index.js';
import { AppError, ERROR_CODES, isAppError } from '../shared/errors.js';
import type { PresignedUrl } from '../storage/s3/object-store.js';
import type { EngineDeps } from './engine-deps.js';
import { deadHolders, jobActivity, liveHolders, type ActivityClock } from './job-activity.js';
import { DEFAULT_MAX_ERROR_RATE, JOB_STATUSES, PAUSE_REASONS, type ExportFilter } from '../storage/job-states.js';
import { FILE_ERROR_CODES } from './file-errors.js';
import type { JobOptions, JobRecord } from '../storage/job-records.js';

export interface SubmitJob {
  accountId: string;
  type: string;
  body: Readable;
  inputName: string | null;
  options: JobOptions;
  onUploadProgress?: (bytes: number) => void;
}

/** What callers do with jobs: submit, cancel, resume, and fetch results. The workers do the rest. */
export class JobService {
  constructor(private readonly deps: EngineDeps) {}

  /** Streams the input into the object store, then queues the job. Nothing is buffered whole. */
  async submit(input: SubmitJob): Promise<JobRecord> {
    jobLookups(input.type, input.options);
    await this.deps.billing.requireAccount(input.accountId);
    const staged = await this.stageInput(input.body, input.onUploadProgress);
    return this.create({ ...staged, inputBytes: staged.size, accountId: input.accountId, type: input.type, inputName: input.inputName, options: input.options });
  }

  /**
   * The first half of a submit, for callers (the HTTP upload) that learn the job's fields only
   * after the file has streamed past.
   */
  async stageInput(body: Readable, onProgress?: (bytes: number) => void): Promise<{ jobId: string; inputKey: string; size: number }> {
    const jobId = `job_${randomUUID()}`;
    const inputKey = `inputs/${jobId}.csv`;
    const put = await this.deps.objects.putStream(inputKey, body, { contentType: 'text/csv', onProgress });
    return { jobId, inputKey, size: put.size };
  }

  async create(input: { jobId: string; inputKey: string; accountId: string; type: string; inputName: string | null; options: JobOptions; inputBytes?: number }): Promise<JobRecord> {
    jobLookups(input.type, input.options);
    const job = await this.deps.jobs.create({
      id: input.jobId,
      accountId: input.accountId,
      type: input.type,
      inputKey: input.inputKey,
      inputName: input.inputName,
      ...(input.inputBytes === undefined ? {} : { inputBytes: input.inputBytes }),
      // The budget is fixed when the job is made, so a later change of the default cannot fail it.
      options: { ...input.options, maxErrorRate: input.options.maxErrorRate ?? DEFAULT_MAX_ERROR_RATE },
      now: this.deps.clock.now(),
    });
    this.deps.log.info({ jobId: job.id, accountId: job.accountId, type: job.type }, 'job created');
    return job;
  }

  /** Removes a staged input that will not become a job (a rejected or duplicate upload). */
  async discardInput(inputKey: string): Promise<void> {
    await this.deps.objects.delete(inputKey);
  }

  async get(id: string): Promise<JobRecord> {
    return this.deps.jobs.require(id);
  }

  async find(id: string): Promise<JobRecord | undefined> {
    return this.deps.jobs.get(id);
  }

  /** The job ends as cancelled, its reservations released and its end event queued, in one step. */
  async cancel(id: string): Promise<JobRecord> {
    const job = await this.deps.jobs.require(id);
    if (job.status === JOB_STATUSES.cancelled) return job;
    const cancelled = await this.deps.jobs.transition(id, JOB_STATUSES.cancelled, { reason: 'cancelled', now: this.deps.clock.now() });
    this.deps.log.info({ jobId: id, accountId: cancelled.accountId }, 'job cancelled');
    return cancelled;
  }

  /**
   * A paused or failed job goes on from its last checkpoint; finished work is never redone. A stalled
   * job (see `jobActivity`) stays running, and the leases of its holders known dead are freed so that
   * any worker takes its work at once. Any other job is refused with what to do next, in `steps`' words.
   */
  async resume(id: string, steps: NextSteps = CLI_STEPS): Promise<JobRecord> {
    const job = await this.deps.jobs.require(id);
    if (job.status === JOB_STATUSES.running) {
      const at = this.activityClock();
      if (!jobActivity(job, at).stalled) throw resumeRefusal(job, steps, at.now);
      for (const owner of deadHolders(job, at.now)) {
        const freed = await this.deps.jobs.freeLeasesOf(owner);
        this.deps.log.warn({ jobId: id, owner, leases: freed }, 'freed the leases of a worker process that has died');
      }
      return this.deps.jobs.require(id);
    }
    const stuck = await this.cannotProgress(job, steps);
    if (stuck) throw stuck;
    try {
      const resumed = await this.deps.jobs.resume(id, this.deps.clock.now());
      this.deps.log.info({ jobId: id, accountId: resumed.accountId, status: resumed.status }, 'job resumed');
      return resumed;
    } catch (error) {
      if (!isAppError(error, ERROR_CODES.invalidState)) throw error;
      // Read again: the job may have moved since the first read (a top-up resumed it, a worker finished it).
      throw resumeRefusal((await this.deps.jobs.get(id)) ?? job, steps, this.deps.clock.now(), error);
    }
  }

  /**
   * A resume that cannot make progress would only send the same `bulk.paused` or `bulk.failed`
   * again: a job paused for credits while the account has none, or failed on its file, which has not
   * changed. Refused with the reason and what to do instead.
   */
  private async cannotProgress(job: JobRecord, steps: NextSteps): Promise<AppError | undefined> {
    if (job.status === JOB_STATUSES.paused && job.reason === PAUSE_REASONS.insufficientCredits && (await this.deps.billing.available(job.accountId)) <= 0) {
      return new AppError(
        ERROR_CODES.insufficientCredits,
        `Job ${job.id} cannot be resumed yet: it paused because the account ran out of credits, and it has none available; ${steps.topUp(job.accountId)}, then resume it`,
        { statusCode: 402 },
      );
    }
    if (job.status === JOB_STATUSES.failed && job.reason !== null && FILE_ERROR_CODES.has(job.reason)) {
      const fix = job.reason === ERROR_CODES.noKeyColumn || job.reason === ERROR_CODES.columnNotFound || job.reason === ERROR_CODES.ambiguousColumn ? steps.chooseColumn : 'fix the file';
      return new AppError(
        ERROR_CODES.invalidState,
        `Job ${job.id} cannot be resumed: it failed on its file (${job.reason}${job.errorMessage ? `: ${job.errorMessage}` : ''}), which would fail the same way again; ${fix} and submit it as a new job`,
        { statusCode: 409 },
      );
    }
    return undefined;
  }

  /** Now, and the lease time that is also the grace before a job no worker holds counts as stalled. */
  activityClock(): ActivityClock {
    return { now: this.deps.clock.now(), leaseMs: this.deps.limits.leaseSeconds * 1000 };
  }

  /**
   * Runs a finished job's failed rows again, and only them; the job is `running` until their
   * retry pass is assembled into new result files. Rows that succeed now are charged as usual.
   */
  async retryFailed(id: string): Promise<JobRecord> {
    const rows = await this.deps.jobs.retryFailed(id, this.deps.clock.now());
    this.deps.log.info({ jobId: id, rows }, 'retrying failed rows');
    return this.deps.jobs.require(id);
  }

  async resultKey(id: string, filter: ExportFilter, steps: NextSteps = CLI_STEPS): Promise<string> {
    const job = await this.deps.jobs.require(id);
    if (job.status !== JOB_STATUSES.completed) {
      // A user who asks for an unfinished job's results wants what is done so far: say how to get it.
      throw new AppError(ERROR_CODES.invalidState, `job ${id} is ${job.status}; the result files exist once it has completed; ${steps.partial(id, filter)}`, { statusCode: 409 });
    }
    const key = { all: job.resultAllKey, found: job.resultFoundKey, errors: job.resultErrorsKey }[filter];
    if (key === null) {
      throw new AppError(ERROR_CODES.invalidState, `job ${id} completed before the ${filter} export existed; it has only all and found`, { statusCode: 409 });
    }
    return key;
  }

  async openResult(id: string, filter: ExportFilter, steps: NextSteps = CLI_STEPS): Promise<Readable> {
    return this.deps.objects.getStream(await this.resultKey(id, filter, steps));
  }

  /** A fresh URL every time, so an expired link can always be renewed. */
  async downloadUrl(id: string, filter: ExportFilter, expiresInSeconds: number, steps: NextSteps = CLI_STEPS): Promise<PresignedUrl> {
    return this.deps.objects.presignGet(await this.resultKey(id, filter, steps), {
      expiresInSeconds,
      downloadName: `${id}-${filter}.csv`,
    });
  }
}

/** How a surface names the next step of a refused resume: the CLI's commands or the API's routes. */
export interface NextSteps {
  follow(id: string): string;
  download(id: string): string;
  /** How to add credits to the account. */
  topUp(accountId: string): string;
  /** How to name the key column of a new job. */
  chooseColumn: string;
  /** How to get the rows an unfinished job has done so far. */
  partial(id: string, filter: string): string;
  /** What starts a worker, for a queued job; empty where the caller cannot start one. */
  worker: string;
}

export const CLI_STEPS: NextSteps = {
  follow: (id) => `follow it with \`sluice jobs show ${id}\``,
  download: (id) => `download its results with \`sluice jobs download ${id} --out FILE\``,
  topUp: (accountId) => `add credits with \`sluice accounts topup ${accountId} N\``,
  chooseColumn: 'name the column that holds the keys with --column NAME',
  partial: (id, filter) => `\`sluice jobs download ${id} --partial${filter === 'all' ? '' : ` --filter ${filter}`} --out FILE\` gives the rows done so far`,
  worker: '; if no `sluice worker` or `sluice serve` runs on this data, start one',
};

export const API_STEPS: NextSteps = {
  follow: (id) => `follow it with GET /api/jobs/${id}`,
  download: (id) => `download its results from GET /api/jobs/${id}/download`,
  topUp: () => 'top up the account (GET /api/account shows what is available)',
  chooseColumn: 'name the column that holds the keys in the `column` field',
  partial: (id, filter) => `GET /api/jobs/${id}/download?${filter === 'all' ? '' : `filter=${filter}&`}partial=true gives the rows done so far`,
  worker: '',
};

/** `invalid_state` (409) saying why the job cannot be resumed and what to do instead. */
export function resumeRefusal(job: JobRecord, steps: NextSteps, now: number, cause?: unknown): AppError {
  const holder = liveHolders(job, now)[0];
  const next: Record<string, string> = {
    [JOB_STATUSES.queued]: `it is queued and starts when a worker is free${steps.worker}; ${steps.follow(job.id)}`,
    [JOB_STATUSES.running]: holder
      ? `it is running on worker ${holder.owner} (lease until ${new Date(holder.until).toISOString()}); ${steps.follow(job.id)}`
      : `it is running; ${steps.follow(job.id)}`,
    [JOB_STATUSES.completed]: `it has completed; ${steps.download(job.id)}`,
    [JOB_STATUSES.cancelled]:
      'it was cancelled and cannot run again; submit the file as a new job (rows paid for within the repeat-free window are not charged again)',
  };
  return new AppError(
    ERROR_CODES.invalidState,
    `Job ${job.id} cannot be resumed: ${next[job.status] ?? `it is ${job.status}`}. Paused, failed and stalled jobs can be resumed.`,
    { statusCode: 409, ...(cause === undefined ? {} : { cause }) },
  );
}

/**
 * A failure budget as callers write it: a share from 0 (no failed row allowed) to 1 (any number).
 * Undefined when the text is no such number.
 */
export function parseErrorRate(raw: string): number | undefined {
  const text = raw.trim();
  if (!/^(?:\d+\.?\d*|\.\d+)$/.test(text)) return undefined;
  const rate = Number(text);
  return rate <= 1 ? rate : undefined;
}
