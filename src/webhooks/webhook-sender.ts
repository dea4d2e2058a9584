import { randomBytes } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Clock } from '../shared/clock.js';
import { toAppError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';
import { DELIVERY_STATUSES, type AttemptRecord, type Delivery } from '../storage/records.js';
import type { DeliveriesPort } from '../storage/store.js';
import type { PostResult } from './http-transport.js';
import type { WebhookClient } from './webhook-client.js';
import type { CreditAlertsPort } from '../storage/credit-alerts.js';
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

/**
 * What one account may hold of the delivery machinery, so that its fan-out cannot delay other
 * accounts' deliveries (issue 16: 3,600 POSTs of one account held another's one delivery 26.5 s).
 */
export const DELIVERY_LIMITS = {
  /** Deliveries attempted at once by one process. */
  concurrency: 8,
  /**
   * Attempts of one account in flight at once, counted over every sender sharing the database
   * (the claim counts the account's live claims): the other slots stay free for the others.
   */
  inFlightPerAccount: 4,
  /** Pending deliveries one account may have; the relay records the excess as failed (backlog_full). */
  pendingPerAccount: 10_000,
} as const;

export interface SenderOptions {
  /** How long an idle sender sleeps before looking again (new events also wake it). */
  pollMs: number;
  attemptTimeoutMs: number;
  /** Deliveries attempted at once by this process. */
  concurrency?: number;
  /** Of `concurrency`, at most this many of one account. */
  inFlightPerAccount?: number;
  maxPendingPerAccount?: number;
  /** Least time between two credit-alert sweeps of this sender; unset: CREDIT_SWEEP_MS. */
  creditSweepMs?: number;
  backoffMs?: readonly number[];
  /** Counts each attempt's outcome in `sluice_webhook_deliveries_total`. */
  metrics?: Pick<Metrics, 'webhookDeliveries'>;
}

export interface SenderDeps {
  webhooks: WebhookStore;
  deliveries: DeliveriesPort;
  client: WebhookClient;
  clock: Clock;
  log: Logger;
  /** Swept before each relay, at most every CREDIT_SWEEP_MS, so that a crossing's event goes out with the next relay. */
  creditAlerts?: CreditAlertsPort | undefined;
}

/**
 * How often a sender looks for accounts whose available credits fell below their alert threshold.
 * Charges happen in many places (lookups, job checkpoints, monitor runs); a sweep here sees them
 * all, whichever process made them, at the cost of up to this delay.
 */
export const CREDIT_SWEEP_MS = 1_000;

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
 *
 * A pool, not rounds: an attempt that ends frees its slot for the next claim at once. Waiting for
 * a round's slowest attempt let one account whose receiver hangs until the timeout hold every other
 * account's deliveries for that long, round after round.
 */
export class WebhookSender {
  readonly id = `sender-${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  private stopping = false;
  /** Set by an attempt that ends or by wake(): a claim now may find work the last one did not. */
  private signalled = false;
  private wakeUp: (() => void) | undefined;
  private readonly claimMs: number;
  private readonly concurrency: number;
  /** Attempts started and not yet recorded. */
  private readonly inFlight = new Set<Promise<void>>();
  private lastCreditSweep = -Infinity;

  constructor(
    private readonly deps: SenderDeps,
    private readonly options: SenderOptions,
  ) {
    this.claimMs = options.attemptTimeoutMs + 5_000;
    this.concurrency = options.concurrency ?? DELIVERY_LIMITS.concurrency;
  }

  /** Claims what the free slots and the per-account cap allow and waits for those attempts; returns how many it made. */
  async tick(): Promise<number> {
    const started = await this.fill();
    await Promise.all(started);
    return started.length;
  }

  /** Until stop(); then lets the attempts in flight finish and record before it returns. */
  async run(): Promise<void> {
    while (!this.stopping) {
      this.signalled = false;
      const claimedAt = this.deps.clock.now();
      let failed = false;
      try {
        await this.fill();
      } catch (e: unknown) {
        failed = true;
        this.deps.log.error({ err: toAppError(e) }, 'webhook claim failed');
      }
      if (!this.stopping) await this.pause(failed ? undefined : claimedAt);
    }
    await Promise.allSettled([...this.inFlight]);
  }

  /** New events are waiting (this process just committed some): look now rather than at the next poll. */
  wake(): void {
    this.signal();
  }

  stop(): void {
    this.stopping = true;
    this.wakeUp?.();
  }

  /**
   * Relays, then claims up to the free slots and starts an attempt for each claimed delivery;
   * returns the attempts started, each settling when recorded (rejecting when it failed).
   */
  private async fill(): Promise<Promise<void>[]> {
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0) return [];
    const { deliveries, clock } = this.deps;
    if (this.deps.creditAlerts && clock.now() - this.lastCreditSweep >= (this.options.creditSweepMs ?? CREDIT_SWEEP_MS)) {
      this.lastCreditSweep = clock.now();
      await this.deps.creditAlerts.sweep(clock.now());
    }
    while ((await deliveries.relayOutbox(clock.now(), undefined, this.options.maxPendingPerAccount ?? DELIVERY_LIMITS.pendingPerAccount)) > 0);
    const perAccount = this.options.inFlightPerAccount ?? DELIVERY_LIMITS.inFlightPerAccount;
    const due = await deliveries.claimDue(this.id, clock.now(), this.claimMs, free, perAccount);
    return due.map((delivery) => this.start(delivery));
  }

  private start(delivery: Delivery): Promise<void> {
    const attempt = this.deliver(delivery);
    const tracked = attempt
      .catch((e: unknown) => this.deps.log.error({ err: toAppError(e), deliveryId: delivery.id }, 'webhook attempt failed'))
      .finally(() => {
        this.inFlight.delete(tracked);
        this.signal();
      });
    this.inFlight.add(tracked);
    return attempt;
  }

  private signal(): void {
    this.signalled = true;
    this.wakeUp?.();
  }

  /**
   * Until an attempt ends, wake() or stop(), or a delivery may have fallen due. A delivery that
   * was due when the last claim ran and was not taken is held by its account's cap or by another
   * sender: looking again at once would spin until an attempt ends, so that waits for the poll.
   * `claimedAt` is undefined when the claim failed.
   */
  private async pause(claimedAt: number | undefined): Promise<void> {
    const abort = new AbortController();
    this.wakeUp = () => abort.abort();
    try {
      if (this.signalled || this.stopping) return;
      const wait = this.inFlight.size >= this.concurrency || claimedAt === undefined ? this.options.pollMs : await this.untilDue(claimedAt);
      await sleep(wait, undefined, { signal: abort.signal }).catch(() => undefined);
    } finally {
      this.wakeUp = undefined;
    }
  }

  private async untilDue(claimedAt: number): Promise<number> {
    const { pollMs } = this.options;
    const next = await this.deps.deliveries.nextDueAt().catch(() => undefined);
    if (next === undefined || next <= claimedAt) return pollMs;
    return Math.min(pollMs, Math.max(0, next - this.deps.clock.now()));
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
    // One line per attempt, whatever its outcome: a receiver answering 500 used to leave no trace.
    // The URL is not logged: a receiver's URL may carry a token in its query.
    const fields = {
      accountId: webhook.accountId,
      jobId: jobIdOf(delivery.payload),
      webhookId: webhook.id,
      deliveryId: delivery.id,
      event: delivery.eventType,
      attempt: attemptsMade,
      status: next.status,
      ...(result.kind === 'response' ? { httpStatus: result.status } : { errorCode: result.code }),
    };
    const outcome = !recorded ? 'lost' : next.status === DELIVERY_STATUSES.success ? 'success' : next.status === DELIVERY_STATUSES.failed ? 'failed' : 'retry';
    this.options.metrics?.webhookDeliveries.inc({ outcome });
    if (!recorded) log.warn(fields, 'webhook claim lost before the attempt was recorded');
    else if (next.status === DELIVERY_STATUSES.success) log.info(fields, 'webhook delivered');
    else if (next.status === DELIVERY_STATUSES.failed) log.warn(fields, 'webhook delivery failed for good');
    else log.info(fields, 'webhook attempt failed; will try again');
  }
}

/** The job a bulk.* event is about (its `data` is the job's summary), for the log line. */
function jobIdOf(payload: unknown): string | undefined {
  const data = (payload as { data?: { id?: unknown } } | null)?.data;
  return typeof data?.id === 'string' && data.id.startsWith('job_') ? data.id : undefined;
}
