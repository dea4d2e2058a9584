import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../shared/clock.js';
import { toAppError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { DELIVERY_STATUSES, type AttemptRecord, type Delivery } from '../storage/records.js';
import type { DeliveriesPort } from '../storage/store.js';
import type { PostResult } from './http-transport.js';
import type { WebhookClient } from './webhook-client.js';
import type { WebhookStore } from './webhook-store.js';

/**
 * The spec's 4 attempts, and our stated waits between them: 30 s, 2 min, 10 min. A receiver's
 * Retry-After replaces the wait, up to 15 minutes.
 */
export const RETRY_POLICY = {
  attempts: 4,
  backoffMs: [30_000, 120_000, 600_000],
  maxRetryAfterMs: 15 * 60_000,
} as const;

export interface SenderOptions {
  /** How long an idle sender sleeps before looking again (new events also wake it). */
  pollMs: number;
  attemptTimeoutMs: number;
  /** Deliveries attempted at once by this process. */
  concurrency?: number;
  backoffMs?: readonly number[];
}

export interface SenderDeps {
  webhooks: WebhookStore;
  deliveries: DeliveriesPort;
  client: WebhookClient;
  clock: Clock;
  log: Logger;
}

/** Where an attempt leaves its delivery: done, failed for good, or pending until a later time. */
export function afterAttempt(result: PostResult, attemptsMade: number, now: number, backoffMs: readonly number[] = RETRY_POLICY.backoffMs): Pick<AttemptRecord, 'status' | 'nextAttemptAt'> {
  if (result.kind === 'response' && result.status >= 200 && result.status < 300) return { status: DELIVERY_STATUSES.success, nextAttemptAt: null };
  if (attemptsMade >= RETRY_POLICY.attempts) return { status: DELIVERY_STATUSES.failed, nextAttemptAt: null };
  const backoff = backoffMs[Math.min(attemptsMade, backoffMs.length) - 1] ?? 0;
  const retryAfter = result.kind === 'response' ? result.retryAfterMs : undefined;
  const wait = retryAfter === undefined ? backoff : Math.min(retryAfter, RETRY_POLICY.maxRetryAfterMs);
  return { status: DELIVERY_STATUSES.pending, nextAttemptAt: now + wait };
}

/**
 * Delivers pending webhook deliveries, in any process that shares the database: relays committed
 * outbox events into deliveries, claims the due ones (the claim outlives one attempt, so a crashed
 * sender's work is taken over), attempts each and records the outcome under its claim.
 */
export class WebhookSender {
  readonly id = `sender-${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private stopping = false;
  private wakeUp: (() => void) | undefined;
  private readonly claimMs: number;

  constructor(
    private readonly deps: SenderDeps,
    private readonly options: SenderOptions,
  ) {
    this.claimMs = options.attemptTimeoutMs + 5_000;
  }

  /** One round; returns how many deliveries it attempted. */
  async tick(): Promise<number> {
    const { deliveries, clock } = this.deps;
    while ((await deliveries.relayOutbox(clock.now())) > 0);
    const due = await deliveries.claimDue(this.id, clock.now(), this.claimMs, this.options.concurrency ?? 8);
    await Promise.all(due.map((d) => this.deliver(d)));
    return due.length;
  }

  async run(): Promise<void> {
    while (!this.stopping) {
      let busy = 0;
      try {
        busy = await this.tick();
      } catch (e: unknown) {
        this.deps.log.error({ err: toAppError(e) }, 'webhook round failed');
      }
      if (busy === 0 && !this.stopping) await this.idle();
    }
  }

  /** New events are waiting (this process just committed some): look now rather than at the next poll. */
  wake(): void {
    this.wakeUp?.();
  }

  stop(): void {
    this.stopping = true;
    this.wakeUp?.();
  }

  private async idle(): Promise<void> {
    const next = await this.deps.deliveries.nextDueAt();
    const wait = next === undefined ? this.options.pollMs : Math.min(this.options.pollMs, Math.max(0, next - this.deps.clock.now()));
    const abort = new AbortController();
    this.wakeUp = () => abort.abort();
    await sleep(wait, undefined, { signal: abort.signal }).catch(() => undefined);
    this.wakeUp = undefined;
  }

  private async deliver(delivery: Delivery): Promise<void> {
    const { webhooks, deliveries, client, clock, log } = this.deps;
    const webhook = await webhooks.get(delivery.webhookId);
    if (!webhook || !webhook.isActive) return; // deleted or paused since the claim: the claim just runs out
    const { result, payload } = await client.attempt(webhook, delivery);
    const at = clock.now();
    const attemptsMade = delivery.attempts + 1;
    const next = afterAttempt(result, attemptsMade, at, this.options.backoffMs);
    const recorded = await deliveries.recordAttempt(delivery.id, this.id, {
      ...next,
      payload,
      responseStatus: result.kind === 'response' ? result.status : null,
      responseBody: result.kind === 'response' ? result.body : null,
      errorCode: result.kind === 'error' ? result.code : null,
      at,
    });
    const fields = { webhookId: webhook.id, deliveryId: delivery.id, attempt: attemptsMade, status: next.status };
    if (!recorded) log.warn(fields, 'webhook claim lost before the attempt was recorded');
    else if (next.status === DELIVERY_STATUSES.failed) log.warn(fields, 'webhook delivery failed for good');
    else log.debug(fields, 'webhook attempt');
  }
}
