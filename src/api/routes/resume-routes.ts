import type { FastifyInstance } from 'fastify';
import { phoneBreachesPipeline } from '../../../pipelines/phone-breaches.js';
import { API_STEPS } from '../../jobs/job-service.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { JobRecord } from '../../storage/job-records.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { jobView } from '../job-view.js';
import { refuseDeleted } from './job-delete-routes.js';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { requestAudit } from './audit-routes.js';

const RESUME_DESCRIPTION =
  'Resumes a paused, failed or stalled job from its last checkpoint: it is `running` again and workers take it up (a stalled job, `running` with no live worker holding its work, has the leases of its dead workers freed so that any worker takes it at once); finished work is never redone or charged twice. A job paused with `insufficient_credits` also resumes by itself when the account is topped up. 409 `invalid_state` for a job in any other state, with what to do instead.';
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
  const audit = requestAudit(deps);

  /** Another account's job (or, on the phone route, a job of another type) does not exist for this caller. */
  const resumeOwn = async (accountId: string, id: string, type?: string): Promise<JobRecord> => {
    const job = await deps.engine.jobs.get(id);
    if (!job || job.accountId !== accountId || (type !== undefined && job.type !== type)) throw httpError(404, ERROR_CODES.jobNotFound, 'Job not found');
    // A deleted job's files are gone: say so (410) rather than let the store's trigger refuse it as a 500.
    await refuseDeleted(deps, id);
    // The service refuses with what to do next (and continues a stalled job), as for `sluice jobs resume`.
    return deps.jobService.resume(id, API_STEPS);
  };

  app.post<{ Params: { id: string } }>(
    '/api/jobs/:id/resume',
    { schema: { tags: ['jobs'], description: RESUME_DESCRIPTION, params: idParams, response: { 200: RESUMED, 404: REFUSED, 409: REFUSED, 410: REFUSED } } },
    async (request) => {
      const caller = requireWritable(request);
      const job = await resumeOwn(caller.accountId, request.params.id);
      await audit(request, AUDIT_ACTIONS.jobResumed, job.id);
      return jobView(job, deps.jobService.activityClock());
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
      const job = await resumeOwn(caller.accountId, id, phoneBreachesPipeline.type);
      await audit(request, AUDIT_ACTIONS.jobResumed, job.id);
      return { ...jobView(job, deps.jobService.activityClock()), feature: 'breaches' };
    },
  );
}
