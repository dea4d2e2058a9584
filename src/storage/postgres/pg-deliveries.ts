import { randomUUID } from 'node:crypto';
import type { AttemptRecord, Delivery } from '../records.js';
import type { DeliveriesPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

const COLUMNS = `d.id, d.webhook_id AS "webhookId", d.message_id AS "messageId", d.event_type AS "eventType", d.payload,
  d.status, d.attempts, d.response_status AS "responseStatus", d.response_body AS "responseBody", d.error_code AS "errorCode",
  d.next_attempt_at AS "nextAttemptAt", d.last_attempt_at AS "lastAttemptAt", d.created_at AS "createdAt"`;

/** Pending, due, not claimed by a live sender, of a webhook that still takes deliveries. */
const DUE = `d.status = 'pending' AND d.next_attempt_at <= $1 AND (d.claimed_until IS NULL OR d.claimed_until < $1)
  AND w.deleted_at IS NULL AND w.is_active`;

type Row = Omit<Delivery, 'payload'> & { payload: string };

/**
 * Delivery records, and the two moves that make delivery durable: the relay turns committed
 * outbox events into pending deliveries (in one transaction, so none is lost or made twice), and
 * a sender claims due deliveries for a while so that two processes never send the same attempt.
 * Both take their rows FOR UPDATE SKIP LOCKED, so relays and senders on several machines share the
 * work instead of queueing behind each other.
 */
export class PgDeliveries implements DeliveriesPort {
  constructor(private readonly db: PgDatabase) {}

  /**
   * Fans committed events out to the webhooks subscribed at this moment. A webhook paused or
   * created later does not get the event; one paused later keeps it pending until resumed.
   *
   * The events are locked before anything is written and marked sent in the same transaction: a
   * second relay skips them while this one runs, and after it commits re-checks `sent_at` on the
   * locked rows and drops them, so no event is fanned out twice. UNIQUE (webhook_id, message_id)
   * is the backstop.
   */
  async relayOutbox(now: number, limit = 100): Promise<number> {
    // Read first: an idle sender must not open a transaction on every poll.
    const { rowCount } = await this.db.query('SELECT 1 FROM outbox WHERE sent_at IS NULL LIMIT 1');
    if (rowCount === 0) return 0;
    return this.db.transaction(async (tx) => {
      const { rows: events } = await tx.query<{ id: string }>(
        'SELECT id FROM outbox WHERE sent_at IS NULL ORDER BY created_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED',
        [limit],
      );
      if (events.length === 0) return 0;
      const ids = events.map((e) => e.id);
      await tx.query(
        `INSERT INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, next_attempt_at, created_at)
         SELECT gen_random_uuid()::text, w.id, o.id, o.event, o.payload, 'pending', 0, $2, $2
           FROM unnest($1::text[]) WITH ORDINALITY AS e (id, n)
           JOIN outbox o ON o.id = e.id
           JOIN webhooks w ON w.account_id = o.account_id AND w.deleted_at IS NULL AND w.is_active AND (w.events::jsonb) ? o.event
          ORDER BY e.n, w.created_at, w.id COLLATE "C"
         ON CONFLICT (webhook_id, message_id) DO NOTHING`,
        [ids, now],
      );
      await tx.query('UPDATE outbox SET sent_at = $1 WHERE id = ANY($2::text[])', [now, ids]);
      return events.length;
    });
  }

  /**
   * Takes up to `limit` due deliveries for `leaseMs`; a sender that dies lets them go when it ends.
   * SKIP LOCKED passes over rows another sender is claiming; once that sender commits, its rows
   * fail the re-checked `claimed_until` and are not taken twice.
   */
  async claimDue(owner: string, now: number, leaseMs: number, limit: number): Promise<Delivery[]> {
    const { rows } = await this.db.query<Row>(
      `WITH due AS (
         SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE ${DUE}
          ORDER BY d.next_attempt_at, d.seq LIMIT $4
          FOR UPDATE OF d SKIP LOCKED
       ), claimed AS (
         UPDATE webhook_deliveries d SET claimed_by = $2, claimed_until = $3 FROM due WHERE d.id = due.id
         RETURNING d.*
       )
       SELECT ${COLUMNS} FROM claimed d ORDER BY d.next_attempt_at, d.seq`,
      [now, owner, now + leaseMs, limit],
    );
    return rows.map(fromRow);
  }

  /** Refused (false) when the claim was lost meanwhile: another sender owns the next attempt. */
  async recordAttempt(id: string, owner: string, attempt: AttemptRecord): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE webhook_deliveries SET status = $3, attempts = attempts + 1, payload = $4, response_status = $5, response_body = $6,
         error_code = $7, next_attempt_at = $8, last_attempt_at = $9, claimed_by = NULL, claimed_until = NULL
       WHERE id = $1 AND claimed_by = $2 AND status = 'pending'`,
      [
        id,
        owner,
        attempt.status,
        JSON.stringify(attempt.payload),
        attempt.responseStatus,
        attempt.responseBody,
        attempt.errorCode,
        attempt.nextAttemptAt,
        attempt.at,
      ],
    );
    return rowCount === 1;
  }

  /** A test delivery is made at once, by the request itself, and only recorded here. */
  async recordTest(webhookId: string, messageId: string, attempt: AttemptRecord): Promise<Delivery> {
    const { status, payload, responseStatus, responseBody, errorCode, at } = attempt;
    const { rows } = await this.db.query<Row>(
      `INSERT INTO webhook_deliveries AS d (id, webhook_id, message_id, event_type, payload, status, attempts, response_status,
         response_body, error_code, last_attempt_at, created_at) VALUES ($1, $2, $3, 'test', $4, $5, 1, $6, $7, $8, $9, $9)
       RETURNING ${COLUMNS}`,
      [randomUUID(), webhookId, messageId, JSON.stringify(payload), status, responseStatus, responseBody, errorCode, at],
    );
    return fromRow(rows[0]!);
  }

  async get(id: string): Promise<Delivery | undefined> {
    const { rows } = await this.db.query<Row>(`SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.id = $1`, [id]);
    return rows[0] && fromRow(rows[0]);
  }

  /** `seq` breaks ties within a millisecond as SQLite's rowid does: the later insert first. */
  async list(webhookId: string, limit: number): Promise<Delivery[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT ${COLUMNS} FROM webhook_deliveries d WHERE d.webhook_id = $1 ORDER BY d.created_at DESC, d.seq DESC LIMIT $2`,
      [webhookId, limit],
    );
    return rows.map(fromRow);
  }

  /** The same `webhook-id` goes out again, with a fresh set of attempts. */
  async redeliver(id: string, now: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      `UPDATE webhook_deliveries SET status = 'pending', attempts = 0, next_attempt_at = $1, error_code = NULL, claimed_by = NULL, claimed_until = NULL
        WHERE id = $2 AND status = 'failed'`,
      [now, id],
    );
    return rowCount === 1;
  }

  /**
   * SQLite's two-argument max() is NULL when either side is; greatest() skips NULLs, which would
   * turn a pending row without a due time into "due at the claim's end". Such rows stay out here.
   */
  async nextDueAt(): Promise<number | undefined> {
    const { rows } = await this.db.query<{ at: number | null }>(
      `SELECT min(greatest(d.next_attempt_at, coalesce(d.claimed_until, 0))) AS at FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
        WHERE d.status = 'pending' AND d.next_attempt_at IS NOT NULL AND w.deleted_at IS NULL AND w.is_active`,
    );
    return rows[0]?.at ?? undefined;
  }
}

function fromRow(row: Row): Delivery {
  return { ...row, payload: JSON.parse(row.payload) as unknown };
}
