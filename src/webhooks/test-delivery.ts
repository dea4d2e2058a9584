import { ERROR_CODES } from '../shared/errors.js';
import { DELIVERY_STATUSES } from '../storage/records.js';
import { TEST_EVENT, WEBHOOK_KINDS, type Webhook } from './webhook-store.js';
import type { Webhooks } from './webhooks.js';

export interface TestResult {
  status: 'delivered' | 'failed';
  url: string;
  status_code?: number;
  response_body?: string;
  error?: string;
}

/** Fixed texts: the caller learns that the request never completed, not how the network failed. */
const SAFE_ERRORS: Record<string, string> = {
  [ERROR_CODES.deliveryTimeout]: 'The receiver did not answer in time.',
  [ERROR_CODES.blockedAddress]: 'The webhook URL does not resolve to a public address.',
  [ERROR_CODES.deliveryUnreachable]: 'The receiver could not be reached.',
};

/**
 * Spec 4.2's test: one synthetic `test` event, sent at once with the headers of a real delivery
 * (chat destinations get their own message), recorded in the delivery history, never retried.
 */
export async function testWebhook(webhooks: Webhooks, webhook: Webhook, messageId: string, now: () => number): Promise<TestResult> {
  const payload = { event: TEST_EVENT, data: { test: true, message: 'This is a test event from Sluice.' }, created_at: new Date(now()).toISOString() };
  const { result } = await webhooks.client.attempt(webhook, { messageId, eventType: TEST_EVENT, payload });
  const delivered = result.kind === 'response' && result.status >= 200 && result.status < 300;
  await webhooks.deliveries.recordTest(webhook.id, messageId, {
    status: delivered ? DELIVERY_STATUSES.success : DELIVERY_STATUSES.failed,
    payload,
    responseStatus: result.kind === 'response' ? result.status : null,
    responseBody: result.kind === 'response' ? result.body : null,
    errorCode: result.kind === 'error' ? result.code : null,
    nextAttemptAt: null,
    at: now(),
  });
  const out: TestResult = { status: delivered ? 'delivered' : 'failed', url: webhook.kind === WEBHOOK_KINDS.telegram ? '' : webhook.url };
  if (result.kind === 'response') {
    out.status_code = result.status;
    if (result.body !== null) out.response_body = result.body;
  } else {
    out.error = SAFE_ERRORS[result.code] ?? 'The receiver could not be reached.';
  }
  return out;
}
