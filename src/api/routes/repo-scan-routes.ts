import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { repoScanView, startRepoScan, type RepoScanRequest } from '../../jobs/repo-scan-job.js';
import { SCAN_CONFIG_SCHEMA } from '../../lookups/secrets/scan-config.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';
import { auditLog } from './audit-routes.js';
import { REFUSED, SCAN_RESULT_SCHEMA } from './secret-scan-schemas.js';

const BASE = '/api/lookup/breaches/github';
const RESULT = { ...SCAN_RESULT_SCHEMA, properties: { ...SCAN_RESULT_SCHEMA.properties, error_code: { type: ['string', 'null'], description: 'Why a failed scan failed: clone_failed, repository_too_large, repository_timeout, insufficient_credits' } } };
const ENVELOPE = { type: 'object', required: ['success', 'result', 'message'], properties: { success: { type: 'boolean' }, result: RESULT, message: { type: 'string' } } } as const;

/** Spec 4.6's code-host leak scan: a job on the engine, polled by id. */
export async function repoScanRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = auditLog(deps);

  app.post<{ Body: RepoScanRequest }>(
    BASE,
    {
      schema: {
        operationId: 'startRepositoryScan',
        summary: 'Scan a public repository and its history for exposed credentials',
        description:
          'Spec 4.6: answers 202 `status: processing` with the scan id at once; a worker clones the repository (bare, over https, public addresses only, within SLUICE_REPO_SCAN_MAX_BYTES and SLUICE_REPO_SCAN_TIMEOUT_MS) and runs every commit\'s additions through the engines of `type` (deep scan). Poll GET ' +
          `${BASE}/{id}. Zero findings free; with findings 1 credit. Findings carry commit, author, email and date.`,
        tags: ['lookups'],
        body: {
          type: 'object',
          required: ['url'],
          additionalProperties: false,
          properties: {
            url: { type: 'string', maxLength: 2048, description: 'https URL of a public git repository' },
            type: { type: 'integer', enum: [0, 1, 2], default: 2, description: '0 standard engine, 1 alternate, 2 both with duplicates merged (the default here: a history is scanned deep)' },
            config: SCAN_CONFIG_SCHEMA,
          },
        },
        response: {
          202: ENVELOPE,
          422: { ...REFUSED, description: '`invalid_repository`, `blocked_address` (not a public address), `unknown_rule` or `invalid_request`' },
          503: { ...REFUSED, description: '`provider_unavailable`: repository scans are not configured here' },
        },
      },
    },
    async (request, reply) => {
      const scans = deps.repoScans;
      if (!scans) throw httpError(503, ERROR_CODES.providerUnavailable, 'Repository scans are not available');
      const caller = request.caller!;
      const scan = await startRepoScan(scans, caller.accountId, request.body);
      const userAgent = request.headers['user-agent'];
      await audit.record(caller.accountId, AUDIT_ACTIONS.repositoryScanStarted, { type: 'key', id: caller.key.id, name: caller.key.name }, scan.id, {
        ip: request.ip,
        userAgent: typeof userAgent === 'string' ? userAgent : null,
        label: scan.url,
      });
      return reply.code(202).send({ success: true, result: repoScanView(scan), message: 'Scan started' });
    },
  );

  app.get<{ Params: { id: string } }>(
    `${BASE}/:id`,
    {
      schema: {
        operationId: 'getRepositoryScan',
        summary: 'A repository scan and, once completed, its findings',
        description: 'The same envelope as the start: `status` processing, completed or failed (then `error_code`). Another account\'s scan is 404.',
        tags: ['lookups'],
        params: { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } },
        response: { 200: ENVELOPE, 404: { ...REFUSED, description: '`scan_not_found`' } },
      },
    },
    async (request) => {
      const scans = deps.repoScans;
      const scan = scans ? await scans.scans.get(request.caller!.accountId, request.params.id) : undefined;
      if (!scan) throw httpError(404, ERROR_CODES.scanNotFound, 'No such scan');
      const view = repoScanView(scan);
      const message = scan.status === 'processing' ? 'Scan in progress' : scan.status === 'failed' ? `Scan failed: ${scan.errorCode}` : `${view.summary.total} exposed credential(s) found`;
      return { success: scan.status !== 'failed', result: view, message };
    },
  );
}
