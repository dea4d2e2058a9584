import { breachesByPhone, PHONE_BREACHES_KIND } from '../directory-rules.js';
import type { BreachRecord, BreachRow } from '../records.js';
import type { BreachesPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';


interface Row {
  phone: string;
  breach: string;
  breached_at: string | null;
}

/**
 * The breach index in table `phone_breaches`. A (phone, breach) pair is stored once: a row that
 * repeats one already held (from the same batch or an earlier import) is skipped and the first
 * date stays, so importing the same file twice changes nothing.
 */
export class PgBreaches implements BreachesPort {
  constructor(private readonly db: PgDatabase) {}

  /** COLLATE "C": the summary lists breaches in this order, and must read as SQLite's byte order does. */
  async records(phones: readonly string[]): Promise<Map<string, BreachRecord[]>> {
    if (phones.length === 0) return new Map();
    const { rows } = await this.db.query<Row>(
      `SELECT phone, breach, breached_at FROM phone_breaches WHERE phone = ANY($1::text[])
       ORDER BY phone COLLATE "C", breached_at IS NULL, breached_at COLLATE "C", breach COLLATE "C"`,
      [phones],
    );
    return breachesByPhone(rows);
  }

  /**
   * One statement inserts the batch in its order, so of two rows with one pair in the batch the
   * first wins, as with SQLite's row-by-row INSERT OR IGNORE. An import racing this one waits on
   * the pairs it also inserts and then skips them.
   */
  async add(rows: readonly BreachRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    return this.db.transaction(async (tx) => {
      const { rows: added } = await tx.query<{ phone: string }>(
        `INSERT INTO phone_breaches (phone, breach, breached_at)
         SELECT phone, breach, breached_at FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS r (phone, breach, breached_at, n) ORDER BY n
         ON CONFLICT DO NOTHING RETURNING phone`,
        [rows.map((r) => r.phone), rows.map((r) => r.breach), rows.map((r) => r.breachedAt)],
      );
      // Without this, a number looked up before the import would keep its old answer (often "not
      // breached") from the shared result cache for the whole repeat-free window.
      if (added.length > 0) {
        await tx.query('DELETE FROM result_cache WHERE kind = $1 AND lookup_key = ANY($2::text[])', [PHONE_BREACHES_KIND, [...new Set(added.map((r) => r.phone))]]);
      }
      return added.length;
    });
  }
}
