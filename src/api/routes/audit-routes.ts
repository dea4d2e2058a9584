import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AuditLog, type AuditAction, type AuditActor } from '../../auth/audit-log.js';
import type { AuditRecord } from '../../storage/store.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireAdmin } from '../authenticate.js';

const PAGE = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 100, default: 50 },
    before: { type: 'integer', minimum: 1, description: 'Only entries older than this id: the `next_before` of the previous page' },
  },
} as const;

export function auditLog(deps: ApiDeps): AuditLog {
  return new AuditLog(deps.engine.store.audit, deps.engine.clock, deps.engine.log);
}

/**
 * Records an action of the request's caller: its API key, unless `actor` says otherwise (a login,
 * a session). One call per action in the routes: `await audit(request, AUDIT_ACTIONS.x, id)`.
 */
export function requestAudit(deps: ApiDeps) {
  const log = auditLog(deps);
  return (request: FastifyRequest, action: AuditAction, targetId: string | null, who?: { accountId: string; actor: AuditActor }): Promise<void> => {
    const caller = request.caller;
    const accountId = who?.accountId ?? caller!.accountId;
    const actor: AuditActor = who?.actor ?? { type: 'key', id: caller!.key.id, name: caller!.key.name };
    const userAgent = request.headers['user-agent'];
    return log.record(accountId, action, actor, targetId, { ip: request.ip, userAgent: typeof userAgent === 'string' ? userAgent : null });
  };
}

function entryView(e: AuditRecord) {
  return {
    id: e.id,
    at: new Date(e.at).toISOString(),
    action: e.action,
    actor: e.actorType === 'key' ? { type: e.actorType, id: e.actorId, name: e.actorName } : { type: e.actorType },
    target_id: e.targetId,
    source_ip: e.sourceIp,
    user_agent: e.userAgent,
    label: e.label ?? null,
  };
}

/** The account's audit log, newest first, for admin keys only: it names every key and address. */
export async function auditRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const log = auditLog(deps);

  app.get<{ Querystring: { limit: number; before?: number } }>(
    '/api/account/audit',
    {
      schema: {
        tags: ['keys'],
        description:
          'Admin keys only (403 `forbidden` otherwise). Newest first; `next_before` pages back, null on the last page. Kept 90 days, at most the newest 10,000 entries per account.',
        querystring: PAGE,
      },
    },
    async (request) => {
      const caller = requireAdmin(request);
      const { limit, before } = request.query;
      const entries = await log.list(caller.accountId, { limit, ...(before === undefined ? {} : { before }) });
      return { entries: entries.map(entryView), next_before: entries.length === limit ? entries[entries.length - 1]!.id : null };
    },
  );
}
