import type { FastifyInstance } from 'fastify';
import { EXPORT_FILTERS, JOB_STATUSES, type ExportFilter, type JobStatus } from '../../storage/job-states.js';
import type { JobRecord } from '../../storage/job-records.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { jobView } from '../job-view.js';
import { refuseDeleted } from './job-delete-routes.js';
import { receiveUpload } from './upload.js';

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;

/** Spec 4.7: bulk jobs, their progress, their results and their cancellation. */
export async function jobRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  // onRequest: the key is checked (and the request counted) before the body is even read.
  app.addHook('onRequest', keyAuth(deps));

  /** Another account's job does not exist, as far as this caller can tell; a deleted one is 410. */
  const ownJob = async (accountId: string, id: string): Promise<JobRecord> => {
    const job = await deps.engine.jobs.get(id);
    if (!job || job.accountId !== accountId) throw httpError(404, ERROR_CODES.jobNotFound, 'Job not found');
    await refuseDeleted(deps, job.id);
    return job;
  };

  app.post(
    '/api/jobs/bulk',
    {
      schema: {
        tags: ['jobs'],
        consumes: ['multipart/form-data'],
        response: { 202: { description: 'The queued job', type: 'object', additionalProperties: true } },
        description:
          'Multipart form: `type` (gender, phone_breaches or company, or several joined by commas) or one `lookup` field per lookup (`TYPE` or `TYPE:COLUMN`), `download_link` (true or false), optional `column` (one-lookup jobs), `default_country`, `country_column` (phone: the column holding each row\'s country), `max_error_rate` (0 to 1, default 0.05), `delimiter` (comma, semicolon, tab or pipe; default detected), `encoding` (utf-8, utf-16le, utf-16be, windows-1252 or iso-8859-1; default detected) and `excel` (true: result files start with a UTF-8 BOM), then `file` (CSV). Send the fields before the file. An `Idempotency-Key` header makes a retry safe.',
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const job = await receiveUpload(deps, request, caller.accountId);
      return reply.code(202).send(jobView(job));
    },
  );

  app.get<{ Params: { id: string } }>('/api/jobs/:id', { schema: { tags: ['jobs'], params: idParams } }, async (request) =>
    jobView(await ownJob(request.caller!.accountId, request.params.id)),
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
      return { jobs: jobs.map(jobView), total, limit, offset };
    },
  );

  app.get<{ Params: { id: string }; Querystring: { filter: ExportFilter } }>(
    '/api/jobs/:id/download',
    {
      schema: {
        tags: ['jobs'],
        params: idParams,
        querystring: { type: 'object', properties: { filter: { type: 'string', enum: [...EXPORT_FILTERS], default: 'all' } } },
        response: { 302: { description: 'Redirect (Location) to a fresh presigned URL of the result CSV', type: 'null' } },
      },
    },
    async (request, reply) => {
      const job = await ownJob(request.caller!.accountId, request.params.id);
      // A fresh URL on every call, so an expired link is renewed by asking again.
      const url = await deps.jobService.downloadUrl(job.id, request.query.filter, deps.settings.presignExpiresSeconds);
      reply.header('Cache-Control', 'no-store');
      return reply.redirect(url.url, 302);
    },
  );

  app.post<{ Params: { id: string } }>('/api/jobs/:id/cancel', { schema: { tags: ['jobs'], params: idParams } }, async (request) => {
    const caller = requireWritable(request);
    const job = await ownJob(caller.accountId, request.params.id);
    return jobView(await deps.jobService.cancel(job.id));
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
      return jobView(await deps.jobService.retryFailed(job.id));
    },
  );
}
