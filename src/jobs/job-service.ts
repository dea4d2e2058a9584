import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { pipelineFor } from '../../pipelines/index.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { PresignedUrl } from '../storage/s3/object-store.js';
import type { EngineDeps } from './engine-deps.js';
import { jobEndEvent } from './job-events.js';
import { JOB_STATUSES, type ExportFilter } from './job-states.js';
import type { JobOptions, JobRecord } from './job-store.js';

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
    pipelineFor(input.type);
    this.deps.billing.requireAccount(input.accountId);
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

  create(input: { jobId: string; inputKey: string; accountId: string; type: string; inputName: string | null; options: JobOptions }): JobRecord {
    pipelineFor(input.type);
    return this.deps.jobs.create({
      id: input.jobId,
      accountId: input.accountId,
      type: input.type,
      inputKey: input.inputKey,
      inputName: input.inputName,
      options: input.options,
      now: this.deps.clock.now(),
    });
  }

  /** Removes a staged input that will not become a job (a rejected or duplicate upload). */
  async discardInput(inputKey: string): Promise<void> {
    await this.deps.objects.delete(inputKey);
  }

  get(id: string): JobRecord {
    return this.deps.jobs.require(id);
  }

  find(id: string): JobRecord | undefined {
    return this.deps.jobs.get(id);
  }

  cancel(id: string): JobRecord {
    const job = this.deps.jobs.require(id);
    if (job.status === JOB_STATUSES.cancelled) return job;
    const now = this.deps.clock.now();
    const ended = { ...job, status: JOB_STATUSES.cancelled, reason: 'cancelled', finishedAt: now };
    const cancelled = this.deps.jobs.transition(id, JOB_STATUSES.cancelled, { reason: 'cancelled', now, event: jobEndEvent(ended, now) });
    this.deps.billing.releaseJobReservations(id);
    return cancelled;
  }

  /** A paused or failed job goes on from its last checkpoint; finished work is never redone. */
  resume(id: string): JobRecord {
    const job = this.deps.jobs.require(id);
    if (job.status !== JOB_STATUSES.paused && job.status !== JOB_STATUSES.failed) {
      throw new AppError(ERROR_CODES.invalidState, `job ${id} is ${job.status}; only paused or failed jobs can be resumed`, { statusCode: 409 });
    }
    this.deps.jobs.clearFailures(id);
    return this.deps.jobs.transition(id, JOB_STATUSES.running, { now: this.deps.clock.now() });
  }

  resultKey(id: string, filter: ExportFilter): string {
    const job = this.deps.jobs.require(id);
    const key = filter === 'all' ? job.resultAllKey : job.resultFoundKey;
    if (job.status !== JOB_STATUSES.completed || key === null) {
      throw new AppError(ERROR_CODES.invalidState, `job ${id} is ${job.status}; results exist once it has completed`, { statusCode: 409 });
    }
    return key;
  }

  async openResult(id: string, filter: ExportFilter): Promise<Readable> {
    return this.deps.objects.getStream(this.resultKey(id, filter));
  }

  /** A fresh URL every time, so an expired link can always be renewed. */
  async downloadUrl(id: string, filter: ExportFilter, expiresInSeconds: number): Promise<PresignedUrl> {
    return this.deps.objects.presignGet(this.resultKey(id, filter), {
      expiresInSeconds,
      downloadName: `${id}-${filter}.csv`,
    });
  }
}
