import type { Db } from '../../storage/sqlite/open-database.js';
import { PHONE_BREACHES_KIND } from './embedded-breach-index.js';

export interface BreachRow {
  /** E.164. */
  phone: string;
  breach: string;
  /** ISO date, or null when unknown. */
  breachedAt: string | null;
}

/**
 * Loads the breach index. A (phone, breach) pair is stored once: a line that repeats one already
 * held (from this file or an earlier import) is skipped, the first date stays, and importing the
 * same file twice changes nothing.
 */
export class BreachIndexWriter {
  private readonly insert;
  private readonly forget;

  constructor(private readonly db: Db) {
    this.insert = db.prepare('INSERT OR IGNORE INTO phone_breaches (phone, breach, breached_at) VALUES (?, ?, ?)');
    // Without this, a number looked up before the import would keep its old answer (often "not
    // breached") from the shared result cache for the whole repeat-free window.
    this.forget = db.prepare('DELETE FROM result_cache WHERE kind = ? AND lookup_key IN (SELECT value FROM json_each(?))');
  }

  /** Adds one batch in one transaction; returns how many pairs were new to the index. */
  add(rows: readonly BreachRow[]): number {
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
