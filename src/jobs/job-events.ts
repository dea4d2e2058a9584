import { randomUUID } from 'node:crypto';
import { jobLookups } from '../../pipelines/index.js';
import type { PresignedUrl } from '../storage/s3/object-store.js';
import type { OutboxEvent } from '../storage/records.js';
import type { PayloadEnricher } from '../webhooks/webhook-client.js';
import { WEBHOOK_EVENTS } from '../webhooks/webhook-store.js';
import { EXPORT_FILTERS, JOB_STATUSES, type ExportFilter } from '../storage/job-states.js';
import type { JobRecord } from '../storage/job-records.js';
import { jobSummary } from './job-summary.js';

/**
 * `bulk.completed` for a job that reached a terminal state (completed, failed or cancelled). It goes
 * into the outbox in the same transaction as that state; the sender adds fresh download URLs.
 */
export function jobEndEvent(job: JobRecord, now: number): OutboxEvent {
  return {
    id: `evt_${randomUUID()}`,
    event: WEBHOOK_EVENTS.bulkCompleted,
    accountId: job.accountId,
    payload: { event: WEBHOOK_EVENTS.bulkCompleted, data: jobSummary(job), created_at: new Date(now).toISOString() },
  };
}

/**
 * `bulk.paused` for a job that has just paused (insufficient_credits, provider_unavailable, an
 * operator). It goes into the outbox in the same transaction as the pause. `rows_left` counts rows
 * not yet processed; `credits_needed_max` is an upper bound on what finishing costs (rows left
 * times one credit per lookup of a row): which of those rows are repeats already paid for, and
 * so free, is known only when they are processed.
 */
export function jobPausedEvent(job: JobRecord, now: number): OutboxEvent {
  const summary = jobSummary(job);
  const rowsLeft = job.totalRows === null ? null : Math.max(0, job.totalRows - job.processedRows);
  const creditsPerRow = jobLookups(job.type, job.options).length;
  const data = { ...summary, rows_left: rowsLeft, credits_needed_max: rowsLeft === null ? null : rowsLeft * creditsPerRow };
  return {
    id: `evt_${randomUUID()}`,
    event: WEBHOOK_EVENTS.bulkPaused,
    accountId: job.accountId,
    payload: { event: WEBHOOK_EVENTS.bulkPaused, data, created_at: new Date(now).toISOString() },
  };
}

/**
 * Fresh download links for a completed `bulk.completed` of a job created with download_link=true,
 * made at send time so that a retry or a redelivery never carries an expired URL: `download_url`
 * (the `all` file, as the spec names it) with `expires_at`, and `downloads` with one per filter.
 */
export function withDownloadUrls(jobs: JobLinks, expiresInSeconds: number): PayloadEnricher {
  return async (event, payload) => {
    if (event !== WEBHOOK_EVENTS.bulkCompleted) return payload;
    const envelope = payload as { data: { id: string } & Record<string, unknown> };
    const job = await jobs.find(envelope.data.id);
    if (!job || job.status !== JOB_STATUSES.completed || !job.options.downloadLink) return payload;
    const downloads: Record<string, { download_url: string; expires_at: string }> = {};
    for (const filter of EXPORT_FILTERS) {
      const url = await jobs.downloadUrl(job.id, filter, expiresInSeconds);
      downloads[filter] = { download_url: url.url, expires_at: url.expiresAt.toISOString() };
    }
    return { ...envelope, data: { ...envelope.data, download_url: downloads.all!.download_url, expires_at: downloads.all!.expires_at, downloads } };
  };
}

/** The part of JobService that links need (an interface here keeps job-service -> job-events one way). */
export interface JobLinks {
  find(id: string): Promise<JobRecord | undefined>;
  downloadUrl(id: string, filter: ExportFilter, expiresInSeconds: number): Promise<PresignedUrl>;
}
