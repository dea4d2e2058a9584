import { randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { Delivery } from '../../storage/records.js';
import { checkWebhookUrl } from '../../webhooks/address-policy.js';
import { DELIVERY_LIMITS } from '../../webhooks/webhook-sender.js';
import { MAX_WEBHOOKS_PER_ACCOUNT, TEST_EVENT, WEBHOOK_EVENTS, WEBHOOK_KINDS, type Webhook } from '../../webhooks/webhook-store.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireAdmin, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { testWebhook } from '../../webhooks/test-delivery.js';
import { requestAudit } from './audit-routes.js';
import { WebhookBody } from './webhook-body.js';

const DELIVERY_LIST_LIMIT = 50;
const CREATE_DESCRIPTION =
  `Registers a webhook. An account may have at most ${MAX_WEBHOOKS_PER_ACCOUNT} webhooks, paused ones included; past that the answer is ` +
  `409 too_many_webhooks until one is deleted. Each account may have ${DELIVERY_LIMITS.pendingPerAccount} deliveries pending; deliveries of ` +
  'events past that are listed as failed with error_code backlog_full and no attempt, and can be sent again by redelivery. ' +
  'A single lookup that is a free repeat within the billing window sends no lookup.completed event. ' +
  `events: any of ${Object.values(WEBHOOK_EVENTS).join(', ')} (default ${WEBHOOK_EVENTS.bulkCompleted}).`;
const DELIVERIES_DESCRIPTION =
  `A JSON array of the webhook's ${DELIVERY_LIST_LIMIT} most recent deliveries, newest first, without the {success, result} envelope ` +
  'of the other webhook routes; errors (400 without webhook_id, 404 for an unknown or deleted webhook) keep that envelope.';
/** The longest both secrets sign (a week) and the overlap without `overlap_seconds` (a day). */
const MAX_OVERLAP_SECONDS = 7 * 86_400;
const DEFAULT_OVERLAP_SECONDS = 86_400;
const ROTATE_DESCRIPTION =
  'Admin keys only. A new signing secret, returned this once (later: GET /api/webhooks/{id}). Body (optional): `overlap_seconds`, 0 to ' +
  `${MAX_OVERLAP_SECONDS} (default ${DEFAULT_OVERLAP_SECONDS}): until then every delivery carries a signature with the new secret and one with ` +
  'the secret before, space-separated in `webhook-signature` (two `v1,` entries) and in `X-Sluice-Signature` (two `sha256=` entries); after it, ' +
  'the new one only, and the old secret is erased. 409 `invalid_state` for a Telegram webhook (it has no signing secret).';
const TELEGRAM_TOKEN = /^\d{1,20}:[A-Za-z0-9_-]{1,100}$/;
const PAGE = { type: 'object', properties: { limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, offset: { type: 'integer', minimum: 0, default: 0 } } } as const;

export function webhookView(webhook: Webhook) {
  return {
    id: webhook.id,
    url: webhook.url,
    events: webhook.events,
    description: webhook.description,
    is_active: webhook.isActive,
    kind: webhook.kind,
    ...(webhook.kind === WEBHOOK_KINDS.telegram ? { telegram_chat_id: webhook.telegramChat } : {}),
    created_at: new Date(webhook.createdAt).toISOString(),
    updated_at: new Date(webhook.updatedAt).toISOString(),
  };
}

export function deliveryView(d: Delivery) {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: d.id,
    webhook_id: d.webhookId,
    event_type: d.eventType,
    message_id: d.messageId,
    payload: d.payload,
    status: d.status,
    attempts: d.attempts,
    response_status: d.responseStatus,
    response_body: d.responseBody,
    error_code: d.errorCode,
    last_attempt_at: iso(d.lastAttemptAt),
    next_attempt_at: d.status === 'pending' ? iso(d.nextAttemptAt) : null,
    created_at: iso(d.createdAt)!,
  };
}

/** Spec 4.2: webhook management, in the `{success, result, message}` envelope. */
export async function webhookRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);
  const { store, deliveries, policy } = deps.webhooks;
  const now = () => deps.engine.clock.now();

  const ownWebhook = async (accountId: string, id: string): Promise<Webhook> => {
    const webhook = await store.get(id);
    if (!webhook || webhook.accountId !== accountId) throw httpError(404, ERROR_CODES.notFound, 'Webhook not found');
    return webhook;
  };

  app.post<{ Body: unknown }>('/api/webhooks', { schema: { tags: ['webhooks'], description: CREATE_DESCRIPTION } }, async (request) => {
    const caller = requireWritable(request);
    const body = new WebhookBody(request.body);
    const kind = body.kind();
    const events = body.events() ?? [WEBHOOK_EVENTS.bulkCompleted];
    const description = body.optionalString('description', 500) ?? '';
    const isActive = body.optionalBoolean('is_active') ?? true;
    if (kind === WEBHOOK_KINDS.telegram) {
      const chatId = body.required('telegram_chat_id');
      const token = body.required('telegram_bot_token');
      // The token goes into the Bot API's path as it is, so it must be a token and nothing more.
      if (!TELEGRAM_TOKEN.test(token)) throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: telegram_bot_token is not a Telegram bot token');
      const { webhook } = await store.create({ accountId: caller.accountId, kind, url: '', events, description, isActive, telegram: { chatId, token }, now: now() });
      await audit(request, AUDIT_ACTIONS.webhookCreated, webhook.id);
      return { success: true, result: webhookView(webhook), message: 'Webhook created' };
    }
    const url = await checkWebhookUrl(body.required('url'), policy);
    const { webhook, secret } = await store.create({ accountId: caller.accountId, kind, url: url.href, events, description, isActive, now: now() });
    await audit(request, AUDIT_ACTIONS.webhookCreated, webhook.id);
    return { success: true, result: { ...webhookView(webhook), signing_secret: secret }, message: 'Webhook created; keep the signing secret to verify deliveries' };
  });

  app.get<{ Querystring: { limit: number; offset: number } }>('/api/webhooks', { schema: { tags: ['webhooks'], querystring: PAGE } }, async (request) => {
    const { limit, offset } = request.query;
    const { webhooks, total } = await store.list(request.caller!.accountId, limit, offset);
    return { success: true, result: webhooks.map(webhookView), total, limit, offset, message: `${total} webhook(s)` };
  });

  app.get<{ Querystring: { webhook_id?: string } }>(
    '/api/webhooks/deliveries',
    { schema: { tags: ['webhooks'], description: DELIVERIES_DESCRIPTION, querystring: { type: 'object', properties: { webhook_id: { type: 'string' } } } } },
    async (request) => {
      const id = request.query.webhook_id?.trim();
      if (!id) throw httpError(400, ERROR_CODES.badRequest, 'webhook_id is required');
      const webhook = await ownWebhook(request.caller!.accountId, id);
      // Spec 4.2 gives this route a bare array, unlike the rest of the group: a client written to
      // the spec reads `response[0].status`, which the envelope made undefined. Errors keep the envelope.
      return (await deliveries.list(webhook.id, DELIVERY_LIST_LIMIT)).map(deliveryView);
    },
  );

  app.post<{ Params: { id: string } }>('/api/webhooks/deliveries/:id/redeliver', { schema: { tags: ['webhooks'] } }, async (request) => {
    const caller = requireAdmin(request);
    const delivery = await deliveries.get(request.params.id);
    if (!delivery) throw httpError(404, ERROR_CODES.notFound, 'Delivery not found');
    await ownWebhook(caller.accountId, delivery.webhookId);
    if (delivery.eventType === TEST_EVENT) throw httpError(409, ERROR_CODES.invalidState, 'A test delivery is not sent again; run the test again instead');
    if (!(await deliveries.redeliver(delivery.id, now()))) throw httpError(409, ERROR_CODES.invalidState, `Only a failed delivery can be sent again; this one is ${delivery.status}`);
    return { success: true, result: deliveryView((await deliveries.get(delivery.id))!), message: 'Delivery queued again with the same webhook-id' };
  });

  app.get<{ Params: { id: string } }>('/api/webhooks/:id', { schema: { tags: ['webhooks'] } }, async (request) => {
    const webhook = await ownWebhook(request.caller!.accountId, request.params.id);
    const admin = request.caller!.key.role === 'admin';
    const secret = admin && webhook.kind === WEBHOOK_KINDS.generic ? await store.signingSecret(webhook.id) : undefined;
    const overlapEnd = secret ? await store.overlapEnd(webhook.id, now()) : undefined;
    const rotation = overlapEnd === undefined ? {} : { previous_secret_valid_until: new Date(overlapEnd).toISOString() };
    return { success: true, result: { ...webhookView(webhook), ...(secret ? { signing_secret: secret } : {}), ...rotation }, message: 'Webhook found' };
  });

  app.post<{ Params: { id: string }; Body: unknown }>(
    '/api/webhooks/:id/rotate-secret',
    { schema: { tags: ['webhooks'], description: ROTATE_DESCRIPTION } },
    async (request) => {
      const caller = requireAdmin(request);
      const overlapSeconds = new WebhookBody(request.body).optionalSeconds('overlap_seconds', MAX_OVERLAP_SECONDS) ?? DEFAULT_OVERLAP_SECONDS;
      const webhook = await ownWebhook(caller.accountId, request.params.id);
      const { secret, previousUntil } = await store.rotateSecret(webhook, overlapSeconds * 1000, now());
      await audit(request, AUDIT_ACTIONS.webhookSecretRotated, webhook.id);
      return {
        success: true,
        result: { signing_secret: secret, previous_secret_valid_until: previousUntil === null ? null : new Date(previousUntil).toISOString() },
        message: previousUntil === null ? 'Signing secret rotated; deliveries are signed with the new secret only' : 'Signing secret rotated; deliveries carry a signature with each secret until the overlap ends',
      };
    },
  );

  app.put<{ Body: unknown }>('/api/webhooks', { schema: { tags: ['webhooks'] } }, async (request) => {
    const caller = requireAdmin(request);
    const body = new WebhookBody(request.body);
    const webhook = await ownWebhook(caller.accountId, body.required('id'));
    const events = body.events();
    const description = body.optionalString('description', 500);
    const isActive = body.optionalBoolean('is_active');
    const url = webhook.kind === WEBHOOK_KINDS.generic ? (await checkWebhookUrl(body.required('url'), policy)).href : undefined;
    const updated = await store.update(webhook.id, { url, events, description, isActive }, now());
    if (!updated) throw httpError(404, ERROR_CODES.notFound, 'Webhook not found');
    await audit(request, AUDIT_ACTIONS.webhookUpdated, webhook.id);
    return { success: true, result: { status: 'updated', webhook: webhookView(updated) }, message: 'Webhook updated' };
  });

  const remove = async (request: FastifyRequest<{ Params: { id?: string }; Body: unknown }>) => {
    const caller = requireAdmin(request);
    // The path's id wins; the body's is the older form, read only when the path has none.
    const id = request.params.id ?? new WebhookBody(request.body).required('id');
    const webhook = await ownWebhook(caller.accountId, id);
    if (!(await store.delete(webhook.id, now()))) throw httpError(404, ERROR_CODES.notFound, 'Webhook not found');
    await audit(request, AUDIT_ACTIONS.webhookDeleted, webhook.id);
    return { success: true, result: { status: 'deleted' }, message: 'Webhook deleted; its deliveries stopped' };
  };
  app.delete<{ Params: { id?: string }; Body: unknown }>('/api/webhooks/:id', { schema: { tags: ['webhooks'] } }, remove);
  app.delete<{ Params: { id?: string }; Body: unknown }>('/api/webhooks', { schema: { tags: ['webhooks'] } }, remove);

  app.post<{ Body: unknown }>('/api/webhooks/test', { schema: { tags: ['webhooks'] } }, async (request) => {
    const caller = requireAdmin(request);
    const webhook = await ownWebhook(caller.accountId, new WebhookBody(request.body).required('id'));
    const result = await testWebhook(deps.webhooks, webhook, `evt_${randomUUID()}`, now);
    return { success: true, result, message: result.status === 'delivered' ? 'Test event delivered' : 'Test event was not accepted by the receiver' };
  });
}
