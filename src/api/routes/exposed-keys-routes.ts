import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { scanExposedKeys, type ExposedKeysRequest } from '../../jobs/exposed-keys-scan.js';
import { SCAN_CONFIG_SCHEMA } from '../../lookups/secrets/scan-config.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';
import { auditLog } from './audit-routes.js';
import { REFUSED, SCAN_RESULT_SCHEMA } from './secret-scan-schemas.js';

/** JSON escapes can make 256 KB of content up to six times longer on the wire; the content itself is measured after parsing. */
const BODY_LIMIT = 2 * 1024 * 1024;

const DESCRIPTION =
  'Spec 4.6: scans `content` (at most 256 KB, else 413 `content_too_large`, nothing charged) for credentials with gitleaks\' rules (type 0), secretlint (type 1) or both with duplicates merged (type 2). Never fetches anything. Free when nothing is found; 1 credit when something is, and free (`reused`) when the account paid for the same content within the repeat-free window. Findings carry a masked preview and a fingerprint, never the secret. `source` is recorded in the account\'s activity history (GET /api/account/audit, as the entry\'s label).';

export async function exposedKeysRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = auditLog(deps);
  app.post<{ Body: ExposedKeysRequest }>(
    '/api/lookup/breaches/exposed-keys',
    {
      bodyLimit: BODY_LIMIT,
      schema: {
        operationId: 'scanExposedKeys',
        summary: 'Scan text for exposed credentials',
        description: DESCRIPTION,
        tags: ['lookups'],
        body: {
          type: 'object',
          required: ['content'],
          additionalProperties: false,
          properties: {
            content: { type: 'string', description: 'Text to scan; at most 256 KB (UTF-8)' },
            type: { type: 'integer', enum: [0, 1, 2], default: 0, description: '0 standard engine (gitleaks rules), 1 alternate (secretlint), 2 both with duplicates merged' },
            source: { type: 'string', maxLength: 200, description: 'Label for the origin; appears in activity history; does not affect detection' },
            config: SCAN_CONFIG_SCHEMA,
          },
        },
        response: {
          200: {
            type: 'object',
            required: ['success', 'result', 'message'],
            properties: { success: { type: 'boolean', enum: [true] }, result: SCAN_RESULT_SCHEMA, message: { type: 'string' } },
          },
          402: { ...REFUSED, description: '`insufficient_credits`: findings to pay for and no credit' },
          413: { ...REFUSED, description: '`content_too_large` (content over 256 KB) or `payload_too_large` (body over 2 MB); nothing charged' },
          422: { ...REFUSED, description: '`invalid_request`, `unknown_rule`, or `scan_timeout` (the scan ran past its time budget; nothing charged)' },
          503: { ...REFUSED, description: '`provider_unavailable`: scanning is not configured on this deployment' },
        },
      },
    },
    async (request) => {
      const scans = deps.secretScans;
      if (!scans) throw httpError(503, ERROR_CODES.providerUnavailable, 'Exposed-credential scans are not available');
      const caller = request.caller!;
      const result = await scanExposedKeys(scans, caller.accountId, request.body);
      const userAgent = request.headers['user-agent'];
      await audit.record(caller.accountId, AUDIT_ACTIONS.exposedKeysScanned, { type: 'key', id: caller.key.id, name: caller.key.name }, result.scan_id, {
        ip: request.ip,
        userAgent: typeof userAgent === 'string' ? userAgent : null,
        label: request.body.source ?? null,
      });
      const n = result.summary.total;
      return { success: true, result, message: n === 0 ? 'No exposed credentials found' : `${n} exposed credential${n === 1 ? '' : 's'} found` };
    },
  );
}
