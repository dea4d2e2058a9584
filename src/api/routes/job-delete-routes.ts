import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { deleteJob, refuseDeleted as refuseDeletedJob } from '../../jobs/job-deletion.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { requestAudit } from './audit-routes.js';

const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;

const DELETED_JOB = {
  description: 'The job is deleted: its files are gone, its record and ledger lines stay',
  type: 'object',
  required: ['id', 'status', 'deleted_at', 'deleted_reason', 'files_deleted'],
  properties: {
    id: { type: 'string' },
    status: { type: 'string', description: 'The status the job ended with; deletion does not change it' },
    deleted_at: { type: 'string', format: 'date-time' },
    deleted_reason: { type: 'string', enum: ['requested', 'retention'] },
    files_deleted: { type: 'boolean', description: 'Always true in a 200: a failure to delete answers 503, and a retry finishes it' },
  },
} as const;

const ERROR_BODY = { type: 'object', additionalProperties: true } as const;

/** 410 `job_deleted` for a job whose files were deleted; nothing for any other. */
export function refuseDeleted(deps: ApiDeps, jobId: string): Promise<void> {
  return refuseDeletedJob(deps.engine, jobId);
}

/** `DELETE /api/jobs/{id}`: kept out of job-routes.ts, which holds the reads and the upload. */
export async function jobDeleteRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);

  app.delete<{ Params: { id: string } }>(
    '/api/jobs/:id',
    {
      schema: {
        tags: ['jobs'],
        params: idParams,
        description:
          'Deletes a finished (completed, failed or cancelled) job\'s input, chunks and result files. Its record stays, with the status it ended with, and so do its ledger lines: the account\'s record of what it paid. From then on the job\'s reads and downloads answer 410 `job_deleted`. Deleting it again answers 200 again. A queued, running or paused job is refused with 409 `invalid_state`: cancel it first. Read-only keys get 403.',
        response: {
          200: DELETED_JOB,
          404: { description: 'No such job for this account', ...ERROR_BODY },
          409: { description: '`invalid_state`: the job is not finished (cancel it first), or a worker is still winding it down (try again in a minute)', ...ERROR_BODY },
        },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const job = await deps.engine.jobs.get(request.params.id);
      if (!job || job.accountId !== caller.accountId) throw httpError(404, ERROR_CODES.jobNotFound, 'Job not found');
      const { deletion, marked } = await deleteJob(deps.engine, job.id);
      if (marked) await audit(request, AUDIT_ACTIONS.jobDeleted, job.id);
      return {
        id: job.id,
        status: job.status,
        deleted_at: new Date(deletion.deletedAt).toISOString(),
        deleted_reason: deletion.reason,
        files_deleted: deletion.purgedAt !== null,
      };
    },
  );
}
