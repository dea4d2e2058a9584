import { breachesByPhone, PHONE_BREACHES_KIND } from '../directory-rules.js';
import type { BreachRecord, BreachRow } from '../records.js';
import type { BreachesPort } from '../store.js';
import type { Db } from './open-database.js';


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
export class SqliteBreaches implements BreachesPort {
  private readonly select;
  private readonly insert;
  private readonly forget;

  constructor(private readonly db: Db) {
    this.select = db.prepare(
      `SELECT phone, breach, breached_at FROM phone_breaches
       WHERE phone IN (SELECT value FROM json_each(?))
       ORDER BY phone, breached_at IS NULL, breached_at, breach`,
    );
    this.insert = db.prepare('INSERT OR IGNORE INTO phone_breaches (phone, breach, breached_at) VALUES (?, ?, ?)');
    // Without this, a number looked up before the import would keep its old answer (often "not
    // breached") from the shared result cache for the whole repeat-free window.
    this.forget = db.prepare('DELETE FROM result_cache WHERE kind = ? AND lookup_key IN (SELECT value FROM json_each(?))');
  }

  async records(phones: readonly string[]): Promise<Map<string, BreachRecord[]>> {
    return breachesByPhone(this.select.all(JSON.stringify(phones)) as Row[]);
  }

  async add(rows: readonly BreachRow[]): Promise<number> {
    return this.db
      .transaction(() => {
        const changed = new Set<string>();
        let added = 0;
        for (const row of rows) {
          if (this.insert.run(row.phone, row.breach, row.breachedAt).changes === 0) continue;
          added++;
          changed.add(row.phone);
        }
        if (changed.size > 0) this.forget.run(PHONE_BREACHES_KIND, JSON.stringify([...changed]));
        return added;
      })
      .immediate();
  }
}
