import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { jobLookups } from '../../pipelines/index.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { PresignedUrl } from '../storage/s3/object-store.js';
import type { EngineDeps } from './engine-deps.js';
import { DEFAULT_MAX_ERROR_RATE, JOB_STATUSES, type ExportFilter } from '../storage/job-states.js';
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
    return this.create({ ...staged, accountId: input.accountId, type: input.type, inputName: input.inputName, options: input.options });
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

  async create(input: { jobId: string; inputKey: string; accountId: string; type: string; inputName: string | null; options: JobOptions }): Promise<JobRecord> {
    jobLookups(input.type, input.options);
    return this.deps.jobs.create({
      id: input.jobId,
      accountId: input.accountId,
      type: input.type,
      inputKey: input.inputKey,
      inputName: input.inputName,
      // The budget is fixed when the job is made, so a later change of the default cannot fail it.
      options: { ...input.options, maxErrorRate: input.options.maxErrorRate ?? DEFAULT_MAX_ERROR_RATE },
      now: this.deps.clock.now(),
    });
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
    return this.deps.jobs.transition(id, JOB_STATUSES.cancelled, { reason: 'cancelled', now: this.deps.clock.now() });
  }

  /** A paused or failed job goes on from its last checkpoint; finished work is never redone. */
  async resume(id: string): Promise<JobRecord> {
    return this.deps.jobs.resume(id, this.deps.clock.now());
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

  async resultKey(id: string, filter: ExportFilter): Promise<string> {
    const job = await this.deps.jobs.require(id);
    if (job.status !== JOB_STATUSES.completed) {
      throw new AppError(ERROR_CODES.invalidState, `job ${id} is ${job.status}; results exist once it has completed`, { statusCode: 409 });
    }
    const key = { all: job.resultAllKey, found: job.resultFoundKey, errors: job.resultErrorsKey }[filter];
    if (key === null) {
      throw new AppError(ERROR_CODES.invalidState, `job ${id} completed before the ${filter} export existed; it has only all and found`, { statusCode: 409 });
    }
    return key;
  }

  async openResult(id: string, filter: ExportFilter): Promise<Readable> {
    return this.deps.objects.getStream(await this.resultKey(id, filter));
  }

  /** A fresh URL every time, so an expired link can always be renewed. */
  async downloadUrl(id: string, filter: ExportFilter, expiresInSeconds: number): Promise<PresignedUrl> {
    return this.deps.objects.presignGet(await this.resultKey(id, filter), {
      expiresInSeconds,
      downloadName: `${id}-${filter}.csv`,
    });
  }
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
