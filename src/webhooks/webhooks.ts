import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { DeliveriesPort } from '../storage/store.js';
import type { CreditAlertsPort } from '../storage/credit-alerts.js';
import type { AddressPolicy } from './address-policy.js';
import type { WebhookClient } from './webhook-client.js';
import { WebhookSender, type SenderOptions } from './webhook-sender.js';
import type { WebhookStore } from './webhook-store.js';
import type { WorkflowSecrets } from './workflow-secrets.js';

/** The webhook side of an open engine: what the API and the sender work with. */
export interface Webhooks {
  readonly store: WebhookStore;
  readonly deliveries: DeliveriesPort;
  readonly client: WebhookClient;
  /** The address rules applied to webhook URLs, at creation and on every connection. */
  readonly policy: AddressPolicy;
  readonly attemptTimeoutMs: number;
  /** Swept by every sender for credit crossings (`credits.low`); unset: no credit alerts are sent. */
  readonly creditAlerts?: CreditAlertsPort | undefined;
  /** Workflow secrets (issue 34): their routes, and the webhook steps' headers at send time. */
  readonly workflowSecrets: WorkflowSecrets;
}

/** A sender over an engine's webhooks, for the processes that deliver (`serve`, `worker`, the demo). */
export function webhookSender(
  webhooks: Webhooks,
  clock: Clock,
  log: Logger,
  options: Pick<SenderOptions, 'pollMs' | 'backoffMs' | 'concurrency' | 'inFlightPerAccount' | 'maxPendingPerAccount' | 'metrics' | 'creditSweepMs'>,
): WebhookSender {
  return new WebhookSender(
    { webhooks: webhooks.store, deliveries: webhooks.deliveries, client: webhooks.client, clock, log: log.child({ component: 'webhooks' }), creditAlerts: webhooks.creditAlerts },
    { ...options, attemptTimeoutMs: webhooks.attemptTimeoutMs },
  );
}
