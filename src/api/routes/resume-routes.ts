import type { FastifyInstance } from 'fastify';
import { phoneBreachesPipeline } from '../../../pipelines/phone-breaches.js';
import { AppError, ERROR_CODES, isAppError } from '../../shared/errors.js';
import { JOB_STATUSES } from '../../storage/job-states.js';
import type { JobRecord } from '../../storage/job-records.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { jobView } from '../job-view.js';
import { refuseDeleted } from './job-delete-routes.js';

const RESUME_DESCRIPTION =
  'Resumes a paused or failed job from its last checkpoint: it is `running` again and workers take it up; finished work is never redone or charged twice. A job paused with `insufficient_credits` also resumes by itself when the account is topped up. 409 `invalid_state` for a job in any other state, with what to do instead.';
const RESUMED = { description: 'The job, running again', type: 'object', additionalProperties: true } as const;
const REFUSED = { description: 'Not found, or not resumable in its state', type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' } } } as const;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;
const idQuery = { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } as const;

/**
 * `POST /api/jobs/{id}/resume` and, in the phone-jobs family (which names its job with `?id=`),
 * `POST /api/phone-jobs/resume?id=`: what `sluice jobs resume` does, for API customers.
 */
export async function resumeRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));

  /** Another account's job (or, on the phone route, a job of another type) does not exist for this caller. */
  const resumeOwn = async (accountId: string, id: string, type?: string): Promise<JobRecord> => {
    const job = await deps.engine.jobs.get(id);
    if (!job || job.accountId !== accountId || (type !== undefined && job.type !== type)) throw httpError(404, ERROR_CODES.jobNotFound, 'Job not found');
    // A deleted job's files are gone: say so (410) rather than let the store's trigger refuse it as a 500.
    await refuseDeleted(deps, id);
    try {
      return await deps.jobService.resume(id);
    } catch (error) {
      if (!isAppError(error) || error.code !== ERROR_CODES.invalidState) throw error;
      // Read again: the job may have moved since the first read (a top-up resumed it, a worker finished it).
      throw refusal((await deps.engine.jobs.get(id)) ?? job, error);
    }
  };

  app.post<{ Params: { id: string } }>(
    '/api/jobs/:id/resume',
    { schema: { tags: ['jobs'], description: RESUME_DESCRIPTION, params: idParams, response: { 200: RESUMED, 404: REFUSED, 409: REFUSED, 410: REFUSED } } },
    async (request) => {
      const caller = requireWritable(request);
      return jobView(await resumeOwn(caller.accountId, request.params.id));
    },
  );

  app.post<{ Querystring: { id?: string } }>(
    '/api/phone-jobs/resume',
    {
      schema: {
        tags: ['phone'],
        description: `${RESUME_DESCRIPTION} Query: \`id\` of a phone job.`,
        querystring: idQuery,
        response: { 200: RESUMED, 404: REFUSED, 409: REFUSED, 410: REFUSED },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const id = request.query.id;
      if (!id) throw httpError(400, ERROR_CODES.invalidRequest, 'id is required');
      return { ...jobView(await resumeOwn(caller.accountId, id, phoneBreachesPipeline.type)), feature: 'breaches' };
    },
  );
}

/** The 409 says what the caller can do next, which depends on where the job is. */
function refusal(job: JobRecord, cause: AppError): AppError {
  const next: Record<string, string> = {
    [JOB_STATUSES.queued]: 'it is queued and starts on its own; follow it with GET on the job',
    [JOB_STATUSES.running]: 'it is already running; follow its progress with GET on the job',
    [JOB_STATUSES.completed]: 'it has completed; download its results',
    [JOB_STATUSES.cancelled]: 'it was cancelled and cannot run again; submit the file as a new job (rows paid for within the repeat-free window are not charged again)',
  };
  const hint = next[job.status] ?? `it is ${job.status}`;
  return new AppError(ERROR_CODES.invalidState, `Job ${job.id} cannot be resumed: ${hint}. Only paused or failed jobs can be resumed.`, {
    statusCode: 409,
    cause,
  });
}
