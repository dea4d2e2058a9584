import { randomUUID } from 'node:crypto';
import { ERROR_CODES } from '../../shared/errors.js';
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

/** Due rows ranked round-robin over the accounts; `$4` of them, taken in one statement. */
const CLAIM_UNCAPPED = `WITH ranked AS (
     SELECT d.id, d.next_attempt_at AS at, d.seq,
            ROW_NUMBER() OVER (PARTITION BY w.account_id ORDER BY d.next_attempt_at, d.seq) AS turn
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
      WHERE ${DUE}
   ), due AS (
     SELECT d.id FROM webhook_deliveries d JOIN ranked r ON r.id = d.id
      WHERE d.status = 'pending' AND (d.claimed_until IS NULL OR d.claimed_until < $1)
      ORDER BY r.turn, r.at, r.seq LIMIT $4
      FOR UPDATE OF d SKIP LOCKED
   ), claimed AS (
     UPDATE webhook_deliveries d SET claimed_by = $2, claimed_until = $3 FROM due WHERE d.id = due.id
     RETURNING d.*
   )
   SELECT ${COLUMNS} FROM claimed d ORDER BY d.next_attempt_at, d.seq`;

/** Live claims: held by a sender whose claim has not run out at `$1`. */
const LIVE = `SELECT w.account_id AS account, count(*)::int AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
  WHERE d.status = 'pending' AND d.claimed_until >= $1`;

/**
 * Locks up to `$2` due rows for a capped claim. The account's live claims, as this snapshot has
 * them, take its first turns, so the rows locked are those the cap may leave to this claim and
 * the limit is not spent on an account already at its cap; the exact count comes after the lock.
 */
const LOCK_CAPPED = `WITH live AS (${LIVE} GROUP BY w.account_id), ranked AS (
     SELECT d.id, w.account_id AS account, d.next_attempt_at AS at, d.seq,
            ROW_NUMBER() OVER (PARTITION BY w.account_id ORDER BY d.next_attempt_at, d.seq) + coalesce(l.n, 0) AS turn
       FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id LEFT JOIN live l ON l.account = w.account_id
      WHERE ${DUE}
   )
   SELECT d.id, r.account, r.turn FROM webhook_deliveries d JOIN ranked r ON r.id = d.id
    WHERE r.turn <= $3 AND d.status = 'pending' AND (d.claimed_until IS NULL OR d.claimed_until < $1)
    ORDER BY r.turn, r.at, r.seq LIMIT $2
    FOR UPDATE OF d SKIP LOCKED`;

/** Claims the locked rows (`$5`..`$7`) of the accounts whose claim lock this claim holds (`$8`), up to `$4` live claims each. */
const CLAIM_CAPPED = `WITH locked AS (
     SELECT * FROM unnest($5::text[], $6::text[], $7::bigint[]) AS l (id, account, turn) WHERE l.account = ANY($8::text[])
   ), live AS (${LIVE} AND w.account_id = ANY($8::text[]) GROUP BY w.account_id), due AS (
     SELECT id FROM (
       SELECT l.id, ROW_NUMBER() OVER (PARTITION BY l.account ORDER BY l.turn) + coalesce(v.n, 0) AS k FROM locked l LEFT JOIN live v ON v.account = l.account
     ) AS capped WHERE k <= $4
   ), claimed AS (
     UPDATE webhook_deliveries d SET claimed_by = $2, claimed_until = $3 FROM due WHERE d.id = due.id
     RETURNING d.*
   )
   SELECT ${COLUMNS} FROM claimed d ORDER BY d.next_attempt_at, d.seq`;

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
  async relayOutbox(now: number, limit = 100, maxPendingPerAccount?: number): Promise<number> {
    // Read first: an idle sender must not open a transaction on every poll.
    const { rowCount } = await this.db.query('SELECT 1 FROM outbox WHERE sent_at IS NULL LIMIT 1');
    if (rowCount === 0) return 0;
    return this.db.transaction(async (tx) => {
      const { rows: events } = await tx.query<{ id: string; account: string | null }>(
        'SELECT id, account_id AS account FROM outbox WHERE sent_at IS NULL ORDER BY created_at, seq LIMIT $1 FOR UPDATE SKIP LOCKED',
        [limit],
      );
      if (events.length === 0) return 0;
      const ids = events.map((e) => e.id);
      if (maxPendingPerAccount !== undefined) {
        // Two relays holding different events of one account would each count the other's new
        // deliveries as absent and pass the bound together; in id order, so they cannot deadlock.
        const accounts = [...new Set(events.flatMap((e) => (e.account === null ? [] : [e.account])))].sort();
        for (const account of accounts) await tx.query("SELECT pg_advisory_xact_lock(hashtext('sluice.deliveries:' || $1))", [account]);
      }
      // `turn` numbers an account's new deliveries in relay order; those past what its pending
      // deliveries leave of the bound are kept as failed (backlog_full), never sent by themselves.
      await tx.query(
        `WITH candidate AS (
           SELECT w.id AS webhook_id, o.id AS message_id, o.event, o.payload, o.account_id, e.n, w.created_at AS made, w.id COLLATE "C" AS wid
             FROM unnest($1::text[]) WITH ORDINALITY AS e (id, n)
             JOIN outbox o ON o.id = e.id
             JOIN webhooks w ON w.account_id = o.account_id AND w.deleted_at IS NULL AND w.is_active AND (w.events::jsonb) ? o.event
            WHERE NOT EXISTS (SELECT 1 FROM webhook_deliveries x WHERE x.webhook_id = w.id AND x.message_id = o.id)
         ), held AS (
           SELECT w.account_id, count(*)::int AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
            WHERE $3::int IS NOT NULL AND d.status = 'pending' AND w.deleted_at IS NULL AND w.account_id IN (SELECT account_id FROM candidate)
            GROUP BY w.account_id
         ), ranked AS (
           SELECT c.*, ($3::int IS NULL OR coalesce(h.n, 0) + ROW_NUMBER() OVER (PARTITION BY c.account_id ORDER BY c.n, c.made, c.wid) <= $3::int) AS fits
             FROM candidate c LEFT JOIN held h ON h.account_id = c.account_id
         )
         INSERT INTO webhook_deliveries (id, webhook_id, message_id, event_type, payload, status, attempts, error_code, next_attempt_at, created_at)
         SELECT gen_random_uuid()::text, webhook_id, message_id, event, payload, CASE WHEN fits THEN 'pending' ELSE 'failed' END, 0,
                CASE WHEN fits THEN NULL ELSE '${ERROR_CODES.backlogFull}' END, CASE WHEN fits THEN $2::bigint END, $2
           FROM ranked ORDER BY n, made, wid
         ON CONFLICT (webhook_id, message_id) DO NOTHING`,
        [ids, now, maxPendingPerAccount ?? null],
      );
      await tx.query('UPDATE outbox SET sent_at = $1 WHERE id = ANY($2::text[])', [now, ids]);
      return events.length;
    });
  }

  /**
   * Takes up to `limit` due deliveries for `leaseMs`; a sender that dies lets them go when it ends.
   * `turn` ranks each account's due deliveries, so the claim goes round the accounts (every
   * account's oldest before any account's second). SKIP LOCKED passes over rows another sender is
   * claiming; once that sender commits, its rows fail the re-checked `claimed_until` and are not
   * taken twice.
   *
   * With `perAccount`, the account's live claims (any sender's) count against it, and counting
   * them in the statement that locks would not do: at READ COMMITTED two senders claiming at once
   * would each count from a snapshot without the other's claims and pass the cap together. So the
   * rows are locked first, then each of their accounts' claim lock is tried (never waited for, so
   * no two claims deadlock; an account another sender is claiming is passed over, its rows stay
   * for the next claim), and only then are live claims counted, by a statement whose snapshot
   * holds every claim committed under that lock before.
   */
  async claimDue(owner: string, now: number, leaseMs: number, limit: number, perAccount?: number): Promise<Delivery[]> {
    if (perAccount === undefined) {
      const { rows } = await this.db.query<Row>(CLAIM_UNCAPPED, [now, owner, now + leaseMs, limit]);
      return rows.map(fromRow);
    }
    // Read first: a sender whose slot frees claims again, and most of those claims find nothing.
    const { rowCount } = await this.db.query(`SELECT 1 FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id WHERE ${DUE} LIMIT 1`, [now]);
    if (rowCount === 0) return [];
    return this.db.transaction(async (tx) => {
      const { rows: locked } = await tx.query<{ id: string; account: string; turn: number }>(LOCK_CAPPED, [now, limit, perAccount]);
      if (locked.length === 0) return [];
      const { rows: held } = await tx.query<{ account: string }>(
        "SELECT a AS account FROM unnest($1::text[]) AS a WHERE pg_try_advisory_xact_lock(hashtext('sluice.claims:' || a))",
        [[...new Set(locked.map((r) => r.account))]],
      );
      if (held.length === 0) return [];
      const { rows } = await tx.query<Row>(CLAIM_CAPPED, [
        now,
        owner,
        now + leaseMs,
        perAccount,
        locked.map((r) => r.id),
        locked.map((r) => r.account),
        locked.map((r) => r.turn),
        held.map((r) => r.account),
      ]);
      return rows.map(fromRow);
    });
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

  async pendingCount(): Promise<number> {
    const { rows } = await this.db.query<{ n: string }>(
      `SELECT count(*) AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
        WHERE d.status = 'pending' AND w.deleted_at IS NULL AND w.is_active`,
    );
    return Number(rows[0]?.n ?? 0);
  }
}

function fromRow(row: Row): Delivery {
  return { ...row, payload: JSON.parse(row.payload) as unknown };
}
