import { creditsLowEvent, type CreditAlert, type CreditAlertsPort, type CreditCrossing } from '../credit-alerts.js';
import type { Db } from './open-database.js';
import { SqliteOutbox } from './sqlite-outbox.js';

const AVAILABLE = `(SELECT a.credits FROM accounts a WHERE a.id = c.account_id) AS credits,
  (SELECT COALESCE(SUM(r.amount), 0) FROM credit_reservations r WHERE r.account_id = c.account_id) AS reserved`;

/** Credit alerts on the data dir's one file; a sweep is one IMMEDIATE transaction, serialised against every process. */
export class SqliteCreditAlerts implements CreditAlertsPort {
  private readonly s;
  private readonly outbox: SqliteOutbox;

  constructor(private readonly db: Db) {
    this.outbox = new SqliteOutbox(db);
    this.s = {
      get: db.prepare('SELECT threshold, fired FROM credit_alerts WHERE account_id = ?'),
      set: db.prepare(
        `INSERT INTO credit_alerts (account_id, threshold, fired, updated_at) VALUES (?, ?, 0, ?)
         ON CONFLICT (account_id) DO UPDATE SET threshold = excluded.threshold, fired = 0, updated_at = excluded.updated_at`,
      ),
      remove: db.prepare('DELETE FROM credit_alerts WHERE account_id = ?'),
      all: db.prepare(`SELECT c.account_id AS accountId, c.threshold, c.fired, ${AVAILABLE} FROM credit_alerts c`),
      fire: db.prepare('UPDATE credit_alerts SET fired = 1, updated_at = ? WHERE account_id = ? AND fired = 0'),
      rearm: db.prepare('UPDATE credit_alerts SET fired = 0, updated_at = ? WHERE account_id = ? AND fired = 1'),
    };
  }

  async get(accountId: string): Promise<CreditAlert | undefined> {
    const row = this.s.get.get(accountId) as { threshold: number; fired: number } | undefined;
    return row && { threshold: row.threshold, fired: row.fired === 1 };
  }

  async set(accountId: string, threshold: number | null, now: number): Promise<CreditAlert | undefined> {
    if (threshold === null) this.s.remove.run(accountId);
    else this.s.set.run(accountId, threshold, now);
    return this.get(accountId);
  }

  async sweep(now: number): Promise<CreditCrossing[]> {
    return this.db
      .transaction((): CreditCrossing[] => {
        const announced: CreditCrossing[] = [];
        const rows = this.s.all.all() as (CreditCrossing & { fired: number })[];
        for (const row of rows) {
          const below = row.credits - row.reserved < row.threshold;
          if (below && row.fired === 0 && this.s.fire.run(now, row.accountId).changes === 1) {
            const crossing = { accountId: row.accountId, threshold: row.threshold, credits: row.credits, reserved: row.reserved };
            this.outbox.addIfSubscribed(creditsLowEvent(crossing, now), now);
            announced.push(crossing);
          } else if (!below && row.fired === 1) {
            this.s.rearm.run(now, row.accountId);
          }
        }
        return announced;
      })
      .immediate();
  }
}
