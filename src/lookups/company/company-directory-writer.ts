import type { Db } from '../../storage/sqlite/open-database.js';
import { COMPANY_KIND } from './company-profile.js';
import type { CompanyRecord } from './company-records.js';

export interface CompanyWrite {
  /** Companies new to the directory. */
  inserted: number;
  /** Companies already there whose stored values changed. */
  updated: number;
  /** Companies already there with exactly these values. */
  unchanged: number;
}

const VALUES = 'name, core_key, description, industry, employee_count, country, website, extra';

/**
 * Loads the company directory. A company is the same company when it has the same domain, or,
 * without a domain, the same name key; a line for one already stored replaces its values, so
 * importing the same file twice changes nothing and a corrected file updates in place.
 */
export class CompanyDirectoryWriter {
  private readonly stmts;

  constructor(private readonly db: Db) {
    // DO NOTHING covers both unique indexes: the domain, and the name key of domain-less rows.
    const insert = db.prepare(
      `INSERT INTO companies (name_key, domain, ${VALUES}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
    );
    // The IS NOT guard leaves identical rows alone, so `changes` tells an update from a no-op
    // and the full-text indexes are not rewritten for nothing.
    const update = (where: string) =>
      db.prepare(`UPDATE companies SET name_key = ?, (${VALUES}) = (?, ?, ?, ?, ?, ?, ?, ?) WHERE ${where} AND (name_key, ${VALUES}) IS NOT (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.stmts = {
      insert,
      updateByDomain: update('domain = ?'),
      updateByName: update('domain IS NULL AND name_key = ?'),
      // Answers cached before the import may now be wrong, and not only for the names imported:
      // a new company can become the better near match of any name. So the whole kind goes.
      forget: db.prepare('DELETE FROM result_cache WHERE kind = ?'),
    };
  }

  /** Writes one batch in one transaction. */
  upsert(records: readonly CompanyRecord[]): CompanyWrite {
    return this.db
      .transaction((): CompanyWrite => {
        const write: CompanyWrite = { inserted: 0, updated: 0, unchanged: 0 };
        for (const r of records) {
          const values = [r.name, r.coreKey, r.description, r.industry, r.employeeCount, r.country, r.website, r.extra];
          if (this.stmts.insert.run(r.nameKey, r.domain, ...values).changes > 0) {
            write.inserted++;
            continue;
          }
          const changed =
            r.domain === null
              ? this.stmts.updateByName.run(r.nameKey, ...values, r.nameKey, r.nameKey, ...values)
              : this.stmts.updateByDomain.run(r.nameKey, ...values, r.domain, r.nameKey, ...values);
          if (changed.changes > 0) write.updated++;
          else write.unchanged++;
        }
        if (write.inserted + write.updated > 0) this.stmts.forget.run(COMPANY_KIND);
        return write;
      })
      .immediate();
  }
}
