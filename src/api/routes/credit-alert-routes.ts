import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { errorSchema } from './monitor-schemas.js';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { requestAudit } from './audit-routes.js';

/** The largest threshold: a balance never comes near it, and it stays an exact integer on both stores. */
const MAX_THRESHOLD = 1_000_000_000_000;

const ALERT = {
  description: 'The account\'s credit alert: `credits.low` is sent once when available credits fall below `threshold`, and again only after they have been back at or above it',
  type: 'object',
  required: ['threshold', 'fired'],
  properties: {
    threshold: { type: ['integer', 'null'], description: 'Available credits below which `credits.low` is sent; null: no alert' },
    fired: { type: 'boolean', description: 'The alert has fired for the current crossing and waits for credits to come back above the threshold' },
  },
} as const;

const BODY = {
  type: 'object',
  required: ['threshold'],
  additionalProperties: false,
  properties: { threshold: { type: ['integer', 'null'], minimum: 1, maximum: MAX_THRESHOLD, description: 'A whole number of credits, 1 or more; null removes the alert' } },
} as const;

/**
 * The credit alert an account sets (issue 27, item 8). Any role reads it; admin and tech keys set
 * it. Crossings are found by the webhook senders' sweep (src/webhooks/webhook-sender.ts) and sent
 * as `credits.low` through the outbox like every other event.
 */
export async function creditAlertRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);
  const alerts = deps.engine.store.creditAlerts;
  const view = (alert: { threshold: number; fired: boolean } | undefined) => ({ threshold: alert?.threshold ?? null, fired: alert?.fired ?? false });

  app.get(
    '/api/account/credit-alert',
    { schema: { tags: ['account'], description: ALERT.description, response: { 200: ALERT } } },
    async (request) => view(await alerts.get(request.caller!.accountId)),
  );

  app.put<{ Body: { threshold: number | null } }>(
    '/api/account/credit-alert',
    {
      schema: {
        tags: ['account'],
        description: 'Sets (or with `threshold: null` removes) the credit alert. A new threshold starts un-fired: if available credits are already below it, `credits.low` is sent once. Readonly keys get 403.',
        body: BODY,
        response: { 200: ALERT, 403: { description: 'A readonly key', ...errorSchema }, 422: { description: 'threshold missing, not a whole number from 1, or not null', ...errorSchema } },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const threshold = request.body.threshold;
      if (threshold !== null && (!Number.isSafeInteger(threshold) || threshold < 1)) throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: threshold must be a whole number of credits from 1, or null');
      const alert = await alerts.set(caller.accountId, threshold, deps.engine.clock.now());
      await audit(request, AUDIT_ACTIONS.creditAlertSet, caller.accountId);
      return view(alert);
    },
  );
}
