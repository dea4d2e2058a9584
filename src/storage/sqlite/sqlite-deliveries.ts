import { randomUUID } from 'node:crypto';
import { ERROR_CODES } from '../../shared/errors.js';
import type { AttemptRecord, Delivery } from '../records.js';
import type { DeliveriesPort } from '../store.js';
import type { Db } from './open-database.js';

const COLUMNS = `d.id, d.webhook_id AS webhookId, d.message_id AS messageId, d.event_type AS eventType, d.payload,
  d.status, d.attempts, d.response_status AS responseStatus, d.response_body AS responseBody, d.error_code AS errorCode,
  d.next_attempt_at AS nextAttemptAt, d.last_attempt_at AS lastAttemptAt, d.created_at AS createdAt`;

type Row = Omit<Delivery, 'payload'> & { payload: string };

/**
 * Delivery records, and the two moves that make delivery durable: the relay turns committed
 * outbox events into pending deliveries (in one transaction, so none is lost or made twice), and
 * a sender claims due deliveries for a while so that two processes never send the same attempt.
 */
export class SqliteDeliveries implements DeliveriesPort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      anyUnsent: db.prepare('SELECT 1 FROM outbox WHERE sent_at IS NULL LIMIT 1'),
      unsent: db.prepare('SELECT id, event, account_id AS accountId, payload FROM outbox WHERE sent_at IS NULL ORDER BY created_at LIMIT ?'),
      markSent: db.prepare('UPDATE outbox SET sent_at = ? WHERE id = ?'),
      subscribers: db.prepare('SELECT id, events FROM webhooks WHERE account_id = ? AND deleted_at IS NULL AND is_active = 1'),
      insert: db.prepare(
        `INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, next_attempt_at, created_at)
         VALUES (?, ?, ?, ?, ?, 'pending', 0, ?, ?)`,
      ),
      anyDue: db.prepare(
        `SELECT 1 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= @now AND (d.claimed_until IS NULL OR d.claimed_until < @now)
            AND w.deleted_at IS NULL AND w.is_active = 1 LIMIT 1`,
      ),
      // Round-robin: every account's oldest due delivery comes before any account's second. With a
      // cap, the account's live claims (any sender's) take its first turns: an account with
      // `perAccount` attempts in flight anywhere gets none until one ends.
      due: db.prepare(
        `WITH live AS (
           SELECT w.account_id AS account, count(*) AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
            WHERE @perAccount IS NOT NULL AND d.status = 'pending' AND d.claimed_until >= @now
            GROUP BY w.account_id)
         SELECT id FROM (
           SELECT d.id, d.next_attempt_at AS at, d.rowid AS r,
                  ROW_NUMBER() OVER (PARTITION BY w.account_id ORDER BY d.next_attempt_at, d.rowid) AS turn, w.account_id AS account
             FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
            WHERE d.status = 'pending' AND d.next_attempt_at <= @now AND (d.claimed_until IS NULL OR d.claimed_until < @now)
              AND w.deleted_at IS NULL AND w.is_active = 1) AS t
           LEFT JOIN live l ON l.account = t.account
          WHERE @perAccount IS NULL OR t.turn + coalesce(l.n, 0) <= @perAccount
          ORDER BY t.turn + coalesce(l.n, 0), t.at, t.r LIMIT @limit`,
      ),
      pendingOf: db.prepare(
        `SELECT count(*) AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE w.account_id = ? AND w.deleted_at IS NULL AND d.status = 'pending'`,
      ),
      insertDropped: db.prepare(
        `INSERT OR IGNORE INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, error_code, created_at)
         VALUES (?, ?, ?, ?, ?, 'failed', 0, '${ERROR_CODES.backlogFull}', ?)`,
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
      pendingCount: db.prepare(
        `SELECT count(*) AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND w.deleted_at IS NULL AND w.is_active = 1`,
      ),
    };
  }

  /**
   * Fans committed events out to the webhooks subscribed at this moment. A webhook paused or
   * created later does not get the event; one paused later keeps it pending until resumed.
   */
  async relayOutbox(now: number, limit = 100, maxPendingPerAccount = Infinity): Promise<number> {
    // Read first: an idle sender must not take the write lock on every poll.
    if (!this.s.anyUnsent.get()) return 0;
    return this.db
      .transaction(() => {
        const events = this.s.unsent.all(limit) as Array<{ id: string; event: string; accountId: string | null; payload: string }>;
        // Counted once per account and batch, then kept up to date here: the transaction is the only writer.
        const pending = new Map<string, number>();
        for (const e of events) {
          for (const webhookId of e.accountId === null ? [] : this.subscribers(e.accountId, e.event)) {
            const held = pending.get(e.accountId!) ?? (this.s.pendingOf.get(e.accountId) as { n: number }).n;
            if (held < maxPendingPerAccount) {
              pending.set(e.accountId!, held + this.s.insert.run(randomUUID(), webhookId, e.id, e.event, e.payload, now, now).changes);
            } else {
              pending.set(e.accountId!, held);
              this.s.insertDropped.run(randomUUID(), webhookId, e.id, e.event, e.payload, now);
            }
          }
          this.s.markSent.run(now, e.id);
        }
        return events.length;
      })
      .immediate();
  }

  /**
   * Takes up to `limit` due deliveries for `leaseMs`; a sender that dies lets them go when it ends.
   * The live claims are counted inside the write transaction, so two senders never both see an
   * account below its cap.
   */
  async claimDue(owner: string, now: number, leaseMs: number, limit: number, perAccount?: number): Promise<Delivery[]> {
    if (!this.s.anyDue.get({ now })) return [];
    return this.db
      .transaction(() => {
        const ids = (this.s.due.all({ now, perAccount: perAccount ?? null, limit }) as Array<{ id: string }>).map((r) => r.id);
        for (const id of ids) this.s.claim.run(owner, now + leaseMs, id);
        return ids.map((id) => this.read(id)!);
      })
      .immediate();
  }

  /** Refused (false) when the claim was lost meanwhile: another sender owns the next attempt. */
  async recordAttempt(id: string, owner: string, attempt: AttemptRecord): Promise<boolean> {
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
  async recordTest(webhookId: string, messageId: string, attempt: AttemptRecord): Promise<Delivery> {
    const id = randomUUID();
    const { status, payload, responseStatus, responseBody, errorCode, at } = attempt;
    this.s.insertDone.run(id, webhookId, messageId, 'test', JSON.stringify(payload), status, responseStatus, responseBody, errorCode, at, at);
    return this.read(id)!;
  }

  async get(id: string): Promise<Delivery | undefined> {
    return this.read(id);
  }

  async list(webhookId: string, limit: number): Promise<Delivery[]> {
    return (this.s.list.all(webhookId, limit) as Row[]).map(fromRow);
  }

  /** The same `webhook-id` goes out again, with a fresh set of attempts. */
  async redeliver(id: string, now: number): Promise<boolean> {
    return this.s.redeliver.run(now, id).changes === 1;
  }

  async nextDueAt(): Promise<number | undefined> {
    return (this.s.nextDue.get() as { at: number | null }).at ?? undefined;
  }

  async pendingCount(): Promise<number> {
    return (this.s.pendingCount.get() as { n: number }).n;
  }

  private read(id: string): Delivery | undefined {
    const row = this.s.get.get(id) as Row | undefined;
    return row && fromRow(row);
  }

  /** Ids of the account's active webhooks that subscribe to `event`. */
  private subscribers(accountId: string, event: string): string[] {
    const rows = this.s.subscribers.all(accountId) as Array<{ id: string; events: string }>;
    return rows.filter((w) => (JSON.parse(w.events) as string[]).includes(event)).map((w) => w.id);
  }
}

function fromRow(row: Row): Delivery {
  return { ...row, payload: JSON.parse(row.payload) as unknown };
}
