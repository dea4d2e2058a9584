import type { OutboxEvent } from '../records.js';
import type { PgQueryable } from './pg-database.js';

/**
 * Events go in only inside the transaction of the change that causes them: a crash can then
 * neither lose an event nor announce a change that did not commit.
 */
export async function addToOutbox(tx: PgQueryable, event: OutboxEvent, now: number): Promise<void> {
  await tx.query('INSERT INTO outbox (id, event, account_id, payload, created_at) VALUES ($1, $2, $3, $4, $5)', [
    event.id,
    event.event,
    event.accountId,
    JSON.stringify(event.payload),
    now,
  ]);
}

/**
 * Whether an active, not deleted webhook of the account lists `event`. Frequent events (one per
 * single lookup) are written only then, so accounts without webhooks do not grow the outbox.
 * `events` is a JSON array as text (migration 002).
 */
export async function subscribed(tx: PgQueryable, accountId: string, event: string): Promise<boolean> {
  const { rows } = await tx.query(
    'SELECT 1 FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL AND is_active AND events::jsonb ? $2 LIMIT 1',
    [accountId, event],
  );
  return rows.length > 0;
}
