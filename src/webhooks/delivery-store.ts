import { randomUUID } from 'node:crypto';
import type { Db } from '../storage/sqlite/open-database.js';
import type { WebhookStore } from './webhook-store.js';

export const DELIVERY_STATUSES = { pending: 'pending', success: 'success', failed: 'failed' } as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[keyof typeof DELIVERY_STATUSES];

export interface Delivery {
  id: string;
  webhookId: string;
  messageId: string;
  eventType: string;
  payload: unknown;
  status: DeliveryStatus;
  attempts: number;
  responseStatus: number | null;
  responseBody: string | null;
  errorCode: string | null;
  nextAttemptAt: number | null;
  lastAttemptAt: number | null;
  createdAt: number;
}

/** What one attempt changed; `nextAttemptAt` is set only while the delivery stays pending. */
export interface AttemptRecord {
  status: DeliveryStatus;
  payload: unknown;
  responseStatus: number | null;
  responseBody: string | null;
  errorCode: string | null;
  nextAttemptAt: number | null;
  at: number;
}

const COLUMNS = `d.id, d.webhook_id AS webhookId, d.message_id AS messageId, d.event_type AS eventType, d.payload,
  d.status, d.attempts, d.response_status AS responseStatus, d.response_body AS responseBody, d.error_code AS errorCode,
  d.next_attempt_at AS nextAttemptAt, d.last_attempt_at AS lastAttemptAt, d.created_at AS createdAt`;

type Row = Omit<Delivery, 'payload'> & { payload: string };

/**
 * Delivery records, and the two moves that make delivery durable: the relay turns committed
 * outbox events into pending deliveries (in one transaction, so none is lost or made twice), and
 * a sender claims due deliveries for a while so that two processes never send the same attempt.
 */
export class DeliveryStore {
  private readonly s;

  constructor(
    private readonly db: Db,
    private readonly webhooks: WebhookStore,
  ) {
    this.s = {
      anyUnsent: db.prepare('SELECT 1 FROM outbox WHERE sent_at IS NULL LIMIT 1'),
      unsent: db.prepare('SELECT id, event, account_id AS accountId, payload FROM outbox WHERE sent_at IS NULL ORDER BY created_at LIMIT ?'),
      markSent: db.prepare('UPDATE outbox SET sent_at = ? WHERE id = ?'),
      insert: db.prepare(
        `INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)`,
      ),
      due: db.prepare(
        `SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= ? AND (d.claimed_until IS NULL OR d.claimed_until < ?)
            AND w.deleted_at IS NULL AND w.is_active = 1
          ORDER BY d.next_attempt_at LIMIT ?`,
      ),
      claim: db.prepare('UPDATE webhook_deliveries SET claimed_by = ?, claimed_until = ? WHERE id = ?'),
      get: db.prepare(`SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.id = ?`),
      record: db.prepare(
        `UPDATE webhook_deliveries SET status = @status, attempts = attempts + 1, payload = @payload, response_status = @responseStatus,
           response_body = @responseBody, error_code = @errorCode, next_attempt_at = @nextAttemptAt, last_attempt_at = @at,
           claimed_by = NULL, claimed_until = NULL
         WHERE id = @id AND claimed_by = @owner AND status = 'pending'`,
      ),
      insertDone: db.prepare(
        `INSERT INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, response_status,
           response_body, error_code, last_attempt_at, created_at) VALUES (?, ?, ?, ?, ?, ?, 1, ?, ?, ?, ?, ?)`,
      ),
      list: db.prepare(`SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.webhook_id = ? ORDER BY d.created_at DESC, d.rowid DESC LIMIT ?`),
      redeliver: db.prepare(
        `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = ?, error_code = NULL, claimed_by = NULL, claimed_until = NULL
          WHERE id = ? AND status = 'failed'`,
      ),
      nextDue: db.prepare(
        `SELECT min(max(d.next_attempt_at, coalesce(d.claimed_until, 0))) AS at FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND w.deleted_at IS NULL AND w.is_active = 1`,
      ),
    };
  }

  /**
   * Fans committed events out to the webhooks subscribed at this moment. A webhook paused or
   * created later does not get the event; one paused later keeps it pending until resumed.
   */
  relayOutbox(now: number, limit = 100): number {
    // Read first: an idle sender must not take the write lock on every poll.
    if (!this.s.anyUnsent.get()) return 0;
    return this.db
      .transaction(() => {
        const events = this.s.unsent.all(limit) as Array<{ id: string; event: string; accountId: string | null; payload: string }>;
        for (const e of events) {
          for (const webhook of e.accountId === null ? [] : this.webhooks.subscribers(e.accountId, e.event)) {
            this.s.insert.run(randomUUID(), webhook.id, e.id, e.event, e.payload, now, now);
          }
          this.s.markSent.run(now, e.id);
        }
        return events.length;
      })
      .immediate();
  }

  /** Takes up to `limit` due deliveries for `leaseMs`; a sender that dies lets them go when it ends. */
  claimDue(owner: string, now: number, leaseMs: number, limit: number): Delivery[] {
    if (this.s.due.all(now, now, 1).length === 0) return [];
    return this.db
      .transaction(() => {
        const ids = (this.s.due.all(now, now, limit) as Array<{ id: string }>).map((r) => r.id);
        for (const id of ids) this.s.claim.run(owner, now + leaseMs, id);
        return ids.map((id) => this.get(id)!);
      })
      .immediate();
  }

  /** Refused (false) when the claim was lost meanwhile: another sender owns the next attempt. */
  recordAttempt(id: string, owner: string, attempt: AttemptRecord): boolean {
    return (
      this.s.record.run({
        id,
        owner,
        status: attempt.status,
        payload: JSON.stringify(attempt.payload),
        responseStatus: attempt.responseStatus,
        responseBody: attempt.responseBody,
        errorCode: attempt.errorCode,
        nextAttemptAt: attempt.nextAttemptAt,
        at: attempt.at,
      }).changes === 1
    );
  }

  /** A test delivery is made at once, by the request itself, and only recorded here. */
  recordTest(webhookId: string, messageId: string, attempt: AttemptRecord): Delivery {
    const id = randomUUID();
    const { status, payload, responseStatus, responseBody, errorCode, at } = attempt;
    this.s.insertDone.run(id, webhookId, messageId, 'test', JSON.stringify(payload), status, responseStatus, responseBody, errorCode, at, at);
    return this.get(id)!;
  }

  get(id: string): Delivery | undefined {
    const row = this.s.get.get(id) as Row | undefined;
    return row && fromRow(row);
  }

  /** The most recent first. */
  list(webhookId: string, limit: number): Delivery[] {
    return (this.s.list.all(webhookId, limit) as Row[]).map(fromRow);
  }

  /** A failed delivery goes out again, with the same `webhook-id` and a fresh set of attempts. */
  redeliver(id: string, now: number): boolean {
    return this.s.redeliver.run(now, id).changes === 1;
  }

  /** When the next pending delivery falls due (or its claim runs out), for the sender's sleep. */
  nextDueAt(): number | undefined {
    return (this.s.nextDue.get() as { at: number | null }).at ?? undefined;
  }
}

function fromRow(row: Row): Delivery {
  return { ...row, payload: JSON.parse(row.payload) as unknown };
}
