import { breachesByEmail, DATA_CLASS_SEPARATOR, EMAIL_BREACHES_KIND } from '../directory-rules.js';
import type { EmailBreachRecord, EmailBreachRow } from '../records.js';
import type { EmailBreachesPort } from '../store.js';
import type { Db } from './open-database.js';

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
export class SqliteEmailBreaches implements EmailBreachesPort {
  private readonly select;
  private readonly insert;
  private readonly forget;

  constructor(private readonly db: Db) {
    this.select = db.prepare(
      `SELECT email, breach, breached_at, data_classes FROM email_breaches
       WHERE email IN (SELECT value FROM json_each(?))
       ORDER BY email, breached_at IS NULL, breached_at, breach`,
    );
    this.insert = db.prepare('INSERT OR IGNORE INTO email_breaches (email, breach, breached_at, data_classes) VALUES (?, ?, ?, ?)');
    // Without this, an address answered by a remote provider before the import would keep its old
    // answer (often "not breached") from the shared result cache for the whole repeat-free window.
    this.forget = db.prepare('DELETE FROM result_cache WHERE kind = ? AND lookup_key IN (SELECT value FROM json_each(?))');
  }

  async records(emails: readonly string[]): Promise<Map<string, EmailBreachRecord[]>> {
    return breachesByEmail(this.select.all(JSON.stringify(emails)) as Row[]);
  }

  async add(rows: readonly EmailBreachRow[]): Promise<number> {
    return this.db
      .transaction(() => {
        const changed = new Set<string>();
        let added = 0;
        for (const row of rows) {
          if (this.insert.run(row.email, row.breach, row.breachedAt, row.dataClasses.join(DATA_CLASS_SEPARATOR)).changes === 0) continue;
          added++;
          changed.add(row.email);
        }
        if (changed.size > 0) this.forget.run(EMAIL_BREACHES_KIND, JSON.stringify([...changed]));
        return added;
      })
      .immediate();
  }
}
