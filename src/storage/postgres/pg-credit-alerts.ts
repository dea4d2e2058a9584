import { creditsLowEvent, type CreditAlert, type CreditAlertsPort, type CreditCrossing } from '../credit-alerts.js';
import { addToOutbox, subscribed } from './pg-core-outbox.js';
import type { PgDatabase } from './pg-database.js';

/**
 * Credit alerts in the shared database. A sweep reads the candidates, then marks each crossing
 * fired with a conditional UPDATE (`WHERE NOT fired`) in the transaction that writes its event:
 * of two senders sweeping at once, the second's UPDATE waits for the first's commit, re-checks,
 * changes nothing, and writes no event.
 */
export class PgCreditAlerts implements CreditAlertsPort {
  constructor(private readonly db: PgDatabase) {}

  async get(accountId: string): Promise<CreditAlert | undefined> {
    const { rows } = await this.db.query<{ threshold: string; fired: boolean }>('SELECT threshold, fired FROM credit_alerts WHERE account_id = $1', [accountId]);
    return rows[0] && { threshold: Number(rows[0].threshold), fired: rows[0].fired };
  }

  async set(accountId: string, threshold: number | null, now: number): Promise<CreditAlert | undefined> {
    if (threshold === null) await this.db.query('DELETE FROM credit_alerts WHERE account_id = $1', [accountId]);
    else {
      await this.db.query(
        `INSERT INTO credit_alerts (account_id, threshold, fired, updated_at) VALUES ($1, $2, false, $3)
         ON CONFLICT (account_id) DO UPDATE SET threshold = EXCLUDED.threshold, fired = false, updated_at = EXCLUDED.updated_at`,
        [accountId, threshold, now],
      );
    }
    return this.get(accountId);
  }

  async sweep(now: number): Promise<CreditCrossing[]> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ accountId: string; threshold: string; fired: boolean; credits: string; reserved: string }>(
        `SELECT c.account_id AS "accountId", c.threshold, c.fired, a.credits,
                COALESCE((SELECT SUM(r.amount) FROM credit_reservations r WHERE r.account_id = c.account_id), 0) AS reserved
           FROM credit_alerts c JOIN accounts a ON a.id = c.account_id`,
      );
      const announced: CreditCrossing[] = [];
      for (const row of rows) {
        const crossing = { accountId: row.accountId, threshold: Number(row.threshold), credits: Number(row.credits), reserved: Number(row.reserved) };
        const below = crossing.credits - crossing.reserved < crossing.threshold;
        if (below && !row.fired) {
          const fired = await tx.query('UPDATE credit_alerts SET fired = true, updated_at = $1 WHERE account_id = $2 AND NOT fired', [now, row.accountId]);
          if (fired.rowCount !== 1) continue;
          const event = creditsLowEvent(crossing, now);
          if (await subscribed(tx, event.accountId, event.event)) await addToOutbox(tx, event, now);
          announced.push(crossing);
        } else if (!below && row.fired) {
          await tx.query('UPDATE credit_alerts SET fired = false, updated_at = $1 WHERE account_id = $2 AND fired', [now, row.accountId]);
        }
      }
      return announced;
    });
  }
}
