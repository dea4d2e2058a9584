import type { FastifyInstance } from 'fastify';
import { EXPORT_FILTERS, JOB_STATUSES, type ExportFilter, type JobStatus } from '../../storage/job-states.js';
import type { JobRecord } from '../../storage/job-records.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { jobView } from '../job-view.js';
import { refuseDeleted } from './job-delete-routes.js';
import { openPartialResult } from '../../jobs/partial-results.js';
import { receiveBulkUpload } from './upload.js';
import { API_STEPS } from '../../jobs/job-service.js';
import { deletionTimes } from '../../jobs/job-deletion.js';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { requestAudit } from './audit-routes.js';

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;

/** Spec 4.7: bulk jobs, their progress, their results and their cancellation. */
export async function jobRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  // onRequest: the key is checked (and the request counted) before the body is even read.
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);

  /** Another account's job does not exist, as far as this caller can tell; a deleted one is 410. */
  const ownJob = async (accountId: string, id: string): Promise<JobRecord> => {
    const job = await deps.engine.jobs.get(id);
    if (!job || job.accountId !== accountId) throw httpError(404, ERROR_CODES.jobNotFound, 'Job not found');
    await refuseDeleted(deps, job.id);
    return job;
  };

  app.post<{ Querystring: { dry_run: boolean } }>(
    '/api/jobs/bulk',
    {
      schema: {
        tags: ['jobs'],
        consumes: ['multipart/form-data'],
        querystring: { type: 'object', properties: { dry_run: { type: 'boolean', default: false, description: 'Only estimate: no job, no charge, nothing stored (also a `dry_run` form field before the file)' } } },
        response: {
          200: {
            description:
              'dry_run: what the job would do. `rows` = `valid` + `invalid`; `duplicates`: valid rows repeating an earlier row (free); `repeats`: distinct keys already paid for within the repeat-free window (free); `credits_needed`: one per other distinct valid key and lookup (at most what the job charges); `balance` and `available` (balance less running jobs\' reservations); `invalid_by_code`.',
            type: 'object',
            properties: {
              dry_run: { type: 'boolean' },
              rows: { type: 'integer' },
              valid: { type: 'integer' },
              invalid: { type: 'integer' },
              duplicates: { type: 'integer' },
              repeats: { type: 'integer' },
              credits_needed: { type: 'integer' },
              balance: { type: 'integer' },
              available: { type: 'integer' },
              invalid_by_code: { type: 'object', additionalProperties: { type: 'integer' } },
            },
          },
          202: { description: 'The queued job', type: 'object', additionalProperties: true },
        },
        description:
          'Multipart form: `type` (gender, phone_breaches, company or email_breaches, or several joined by commas) or one `lookup` field per lookup (`TYPE` or `TYPE:COLUMN`), `download_link` (true or false), optional `column` (one-lookup jobs), `default_country`, `country_column` (phone: the column holding each row\'s country), `max_error_rate` (0 to 1, default 0.05), `delimiter` (comma, semicolon, tab or pipe; default detected), `encoding` (utf-8, utf-16le, utf-16be, windows-1252 or iso-8859-1; default detected) and `excel` (true: result files start with a UTF-8 BOM), then `file` (CSV). Send the fields before the file. An `Idempotency-Key` header makes a retry safe. With `dry_run=true` (query or a field before the file) the file is read as it streams, never stored, and the answer is 200 with the estimate: no job, no charge, the Idempotency-Key neither claimed nor recorded; a file the job would refuse is 422 with the code the job would fail with.',
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const outcome = await receiveBulkUpload(deps, request, caller.accountId, request.query.dry_run);
      if (outcome.estimate) return reply.code(200).send(outcome.estimate);
      await audit(request, AUDIT_ACTIONS.jobCreated, outcome.job.id);
      return reply.code(202).send(jobView(outcome.job));
    },
  );

  app.get<{ Params: { id: string } }>('/api/jobs/:id', { schema: { tags: ['jobs'], params: idParams } }, async (request) =>
    jobView(await ownJob(request.caller!.accountId, request.params.id), deps.jobService.activityClock()),
  );

  app.get<{ Querystring: { limit: number; offset: number; status?: JobStatus } }>(
    '/api/jobs',
    {
      schema: {
        tags: ['jobs'],
        querystring: {
          type: 'object',
          properties: {
            limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
            offset: { type: 'integer', minimum: 0, default: 0 },
            status: { type: 'string', enum: Object.values(JOB_STATUSES) },
          },
        },
      },
    },
    async (request) => {
      const { limit, offset, status } = request.query;
      const { jobs, total } = await deps.engine.jobs.list({ accountId: request.caller!.accountId, status, limit, offset });
      const deleted = await deletionTimes(deps.engine, jobs.map((job) => job.id));
      const view = (job: JobRecord) => {
        const at = deleted.get(job.id);
        return { ...jobView(job, deps.jobService.activityClock()), deleted_at: at === undefined ? null : new Date(at).toISOString() };
      };
      return { jobs: jobs.map(view), total, limit, offset };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { filter: ExportFilter; format: 'redirect' | 'json'; partial: boolean } }>(
    '/api/jobs/:id/download',
    {
      schema: {
        tags: ['jobs'],
        params: idParams,
        description:
          'The result CSV. With `partial=true`, a running, paused, cancelled or failed job\'s committed rows so far, in input order (gaps where a chunk is not done yet), streamed as `<job>-<filter>.partial.csv` (whatever `format`) with `X-Sluice-Partial: true`, `X-Sluice-Rows-Included` and `X-Sluice-Rows-Total`; a completed job gives its complete file as without `partial` (with `X-Sluice-Partial: false`); a job not split yet 409.',
        querystring: {
          type: 'object',
          properties: {
            filter: { type: 'string', enum: [...EXPORT_FILTERS], default: 'all' },
            partial: { type: 'boolean', default: false, description: 'The rows processed so far of an unfinished job, marked partial' },
            // A browser page cannot read the Location of a 302 (fetch gives it an opaque response),
            // and must not put the key in a URL: `json` hands it the presigned URL to navigate to.
            format: { type: 'string', enum: ['redirect', 'json'], default: 'redirect', description: '`json`: answer 200 with the URL instead of redirecting' },
          },
        },
        response: {
          200: {
            description: 'With `format=json`: a fresh presigned URL of the result CSV. With `partial=true` on an unfinished job: the CSV itself (text/csv), marked partial',
            type: 'object',
            required: ['download_url', 'expires_at'],
            properties: { download_url: { type: 'string' }, expires_at: { type: 'string' } },
          },
          302: { description: 'Redirect (Location) to a fresh presigned URL of the result CSV', type: 'null' },
        },
      },
    },
    async (request, reply) => {
      const job = await ownJob(request.caller!.accountId, request.params.id);
      if (request.query.partial && job.status !== JOB_STATUSES.completed) {
        // Streamed, not stored: a running job's rows change by the second, and a stored copy would
        // be one more object to presign, expire and purge.
        const partial = await openPartialResult(deps.engine, job, request.query.filter);
        return reply
          .header('Cache-Control', 'no-store')
          .header('Content-Type', 'text/csv; charset=utf-8')
          .header('Content-Disposition', `attachment; filename="${partial.fileName}"`)
          .header('X-Sluice-Partial', 'true')
          .header('X-Sluice-Rows-Included', String(partial.rowsIncluded))
          .header('X-Sluice-Rows-Total', String(partial.totalRows))
          .send(partial.body);
      }
      if (request.query.partial) reply.header('X-Sluice-Partial', 'false');
      // A fresh URL on every call, so an expired link is renewed by asking again.
      const url = await deps.jobService.downloadUrl(job.id, request.query.filter, deps.settings.presignExpiresSeconds, API_STEPS);
      reply.header('Cache-Control', 'no-store');
      if (request.query.format === 'json') return { download_url: url.url, expires_at: url.expiresAt.toISOString() };
      return reply.redirect(url.url, 302);
    },
  );

  app.post<{ Params: { id: string } }>('/api/jobs/:id/cancel', { schema: { tags: ['jobs'], params: idParams } }, async (request) => {
    const caller = requireWritable(request);
    const job = await ownJob(caller.accountId, request.params.id);
    const cancelled = await deps.jobService.cancel(job.id);
    await audit(request, AUDIT_ACTIONS.jobCancelled, job.id);
    return jobView(cancelled);
  });

  app.post<{ Params: { id: string } }>(
    '/api/jobs/:id/retry-failed',
    {
      schema: {
        tags: ['jobs'],
        params: idParams,
        description:
          'Runs the `error` rows of a completed or failed job again, and only them; the job is `running` until new result files are made. 409 `nothing_to_retry` when it has none.',
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const job = await ownJob(caller.accountId, request.params.id);
      const retried = await deps.jobService.retryFailed(job.id);
      await audit(request, AUDIT_ACTIONS.jobRetried, job.id);
      return jobView(retried);
    },
  );
}
