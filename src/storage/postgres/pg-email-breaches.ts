import { breachesByEmail, DATA_CLASS_SEPARATOR, EMAIL_BREACHES_KIND } from '../directory-rules.js';
import type { EmailBreachRecord, EmailBreachRow } from '../records.js';
import type { EmailBreachesPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

interface Row {
  email: string;
  breach: string;
  breached_at: string | null;
  data_classes: string;
}

/**
 * The email breach index in table `email_breaches`. An (email, breach) pair is stored once: a row
 * that repeats one already held (from the same batch or an earlier import) is skipped and the first
 * date and data classes stay, so importing the same file twice changes nothing.
 */
export class PgEmailBreaches implements EmailBreachesPort {
  constructor(private readonly db: PgDatabase) {}

  /** COLLATE "C": answers list breaches in this order, and must read as SQLite's byte order does. */
  async records(emails: readonly string[]): Promise<Map<string, EmailBreachRecord[]>> {
    if (emails.length === 0) return new Map();
    const { rows } = await this.db.query<Row>(
      `SELECT email, breach, breached_at, data_classes FROM email_breaches WHERE email = ANY($1::text[])
       ORDER BY email COLLATE "C", breached_at IS NULL, breached_at COLLATE "C", breach COLLATE "C"`,
      [emails],
    );
    return breachesByEmail(rows);
  }

  /**
   * One statement inserts the batch in its order, so of two rows with one pair in the batch the
   * first wins, as with SQLite's row-by-row INSERT OR IGNORE. An import racing this one waits on
   * the pairs it also inserts and then skips them.
   */
  async add(rows: readonly EmailBreachRow[]): Promise<number> {
    if (rows.length === 0) return 0;
    return this.db.transaction(async (tx) => {
      const { rows: added } = await tx.query<{ email: string }>(
        `INSERT INTO email_breaches (email, breach, breached_at, data_classes)
         SELECT email, breach, breached_at, data_classes
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY AS r (email, breach, breached_at, data_classes, n) ORDER BY n
         ON CONFLICT DO NOTHING RETURNING email`,
        [rows.map((r) => r.email), rows.map((r) => r.breach), rows.map((r) => r.breachedAt), rows.map((r) => r.dataClasses.join(DATA_CLASS_SEPARATOR))],
      );
      // Without this, an address answered by a remote provider before the import would keep its old
      // answer (often "not breached") from the shared result cache for the whole repeat-free window.
      if (added.length > 0) {
        await tx.query('DELETE FROM result_cache WHERE kind = $1 AND lookup_key = ANY($2::text[])', [EMAIL_BREACHES_KIND, [...new Set(added.map((r) => r.email))]]);
      }
      return added.length;
    });
  }
}
