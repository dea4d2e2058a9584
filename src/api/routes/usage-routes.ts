import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../../shared/errors.js';
import type { UsageRecord } from '../../storage/usage-records.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireAdmin } from '../authenticate.js';
import { httpError } from '../errors.js';
import { USAGE_FLUSH_MS, USAGE_RETENTION } from '../usage-log.js';

const QUERY = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
    before: { type: 'integer', minimum: 1, description: 'Only entries older than this id: the `next_before` of the previous page' },
    since: { type: 'string', maxLength: 40, description: 'Only entries at or after this instant (ISO 8601 with a zone)' },
  },
} as const;

function entryView(e: UsageRecord) {
  return {
    id: e.id,
    at: new Date(e.at).toISOString(),
    method: e.method,
    route: e.route,
    status: e.status,
    credits: e.credits,
    duration_ms: e.durationMs,
    key_id: e.keyId,
    source_ip: e.sourceIp,
  };
}

/** The account's usage log (spec 2.2), newest first, for admin keys only: it names every key and address. */
export async function usageRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));

  app.get<{ Querystring: { limit: number; before?: number; since?: string } }>(
    '/api/account/usage',
    {
      schema: {
        tags: ['keys'],
        description:
          `Admin keys only (403 \`forbidden\` otherwise). Every request made with one of the account's API keys: route template, status, the credits the answer reported, response time, key and address; newest first, \`next_before\` pages back (null on the last page). An entry is readable within about ${USAGE_FLUSH_MS} ms of its answer. Kept ${USAGE_RETENTION.days} days, at most the newest ${USAGE_RETENTION.entriesPerAccount} entries per account.`,
        querystring: QUERY,
      },
    },
    async (request) => {
      const caller = requireAdmin(request);
      const { limit, before, since } = request.query;
      const from = since === undefined ? undefined : Date.parse(since);
      if (from !== undefined && (Number.isNaN(from) || !/(?:Z|[+-]\d{2}:\d{2})$/.test(since!))) {
        throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: since must be an ISO 8601 date and time with a zone');
      }
      const entries = await deps.engine.store.usage.list(caller.accountId, { limit, ...(before === undefined ? {} : { before }), ...(from === undefined ? {} : { since: from }) });
      return { entries: entries.map(entryView), next_before: entries.length === limit ? entries[entries.length - 1]!.id : null };
    },
  );
}
