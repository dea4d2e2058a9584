import type { OutboxEvent } from '../records.js';
import type { Db } from './open-database.js';

/**
 * Events are written inside the transaction of the state change that causes them, and only there:
 * a crash can then neither lose an event nor announce a change that did not commit. The relay
 * (SqliteDeliveries) turns them into deliveries later.
 */
export class SqliteOutbox {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      insert: db.prepare('INSERT INTO outbox (id, event, account_id, payload, created_at) VALUES (?, ?, ?, ?, ?)'),
      subscribed: db.prepare(
        `SELECT 1 FROM webhooks, json_each(webhooks.events) AS e
          WHERE account_id = ? AND deleted_at IS NULL AND is_active = 1 AND e.value = ? LIMIT 1`,
      ),
    };
  }

  /** Call inside the caller's transaction. */
  add(event: OutboxEvent, now: number): void {
    this.s.insert.run(event.id, event.event, event.accountId, JSON.stringify(event.payload), now);
  }

  /**
   * For frequent events (one per single lookup): written only when some active webhook of the
   * account wants it, so that accounts without webhooks do not grow the outbox.
   */
  addIfSubscribed(event: OutboxEvent, now: number): void {
    if (this.s.subscribed.get(event.accountId, event.event)) this.add(event, now);
  }
}
