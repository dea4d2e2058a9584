import { randomUUID } from 'node:crypto';
import type { JobRecord, OutboxEvent } from './job-store.js';
import { jobSummary } from './job-summary.js';

/**
 * `bulk.completed` for a job that reached a terminal state (completed, failed or cancelled). It goes
 * into the outbox in the same transaction as that state; the sender adds fresh download URLs.
 */
export function jobEndEvent(job: JobRecord, now: number): OutboxEvent {
  return {
    id: `evt_${randomUUID()}`,
    event: 'bulk.completed',
    accountId: job.accountId,
    payload: { event: 'bulk.completed', data: jobSummary(job), created_at: new Date(now).toISOString() },
  };
}
