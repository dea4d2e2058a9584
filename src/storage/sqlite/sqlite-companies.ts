import { COMPANY_KIND, spellingPieces } from '../directory-rules.js';
import type { CompanyRecord, CompanyRow, CompanyWrite } from '../records.js';
import { COMPANY_KEYS, type CompaniesPort, type CompanyKey } from '../store.js';
import type { Db } from './open-database.js';


const COMPANY_COLUMNS_SQL = 'c.id, c.name, c.domain, c.description, c.industry, c.employee_count, c.country, c.website, c.extra';
const VALUES = 'name, core_key, description, industry, employee_count, country, website, extra';

/**
 * Spelling candidates returned: all of them when there are no more than this; else the best this
 * many by bm25, which costs more because every candidate must be ranked.
 */
const SPELLING_CANDIDATES = 500;
const RANKED_SPELLING_CANDIDATES = 100;

type KeyedRow = CompanyRow & { k: string };

/**
 * The company directory in table `companies`, with its two FTS5 indexes over `core_key`
 * (`companies_words`, `companies_trigrams`) kept in step by triggers. A company is the same
 * company when it has the same domain, or, without a domain, the same name key; a record with a
 * domain that no company has yet takes over the domain-less company of its name key, if any; a
 * record for one already stored replaces its values, so importing the same file twice changes nothing and a
 * corrected file updates in place.
 */
export class SqliteCompanies implements CompaniesPort {
  private readonly stmts;

  constructor(private readonly db: Db) {
    const grouped = (column: CompanyKey) =>
      db.prepare(
        `SELECT c.${column} AS k, ${COMPANY_COLUMNS_SQL} FROM companies c WHERE c.${column} IN (SELECT value FROM json_each(?))
         ORDER BY c.${column}, c.employee_count IS NULL, c.employee_count DESC, c.id`,
      );
    // The IS NOT guard leaves identical rows alone, so `changes` tells an update from a no-op
    // and the full-text indexes are not rewritten for nothing.
    const update = (where: string) =>
      db.prepare(`UPDATE companies SET name_key = ?, (${VALUES}) = (?, ?, ?, ?, ?, ?, ?, ?) WHERE ${where} AND (name_key, ${VALUES}) IS NOT (?, ?, ?, ?, ?, ?, ?, ?, ?)`);
    this.stmts = {
      byKey: new Map(Object.values(COMPANY_KEYS).map((column) => [column, grouped(column)])),
      // Ranked inside the FTS5 query (`rank` is bm25), then joined: ranking the join instead is
      // several times slower for a common word that thousands of names share.
      words: db.prepare(
        `SELECT ${COMPANY_COLUMNS_SQL} FROM (SELECT rowid, rank FROM companies_words WHERE companies_words MATCH ? ORDER BY rank LIMIT ?) w
         JOIN companies c ON c.id = w.rowid ORDER BY w.rank, c.id`,
      ),
      spelling: db.prepare(
        `SELECT c.core_key AS k, ${COMPANY_COLUMNS_SQL} FROM (SELECT rowid FROM companies_trigrams WHERE companies_trigrams MATCH ? LIMIT ${SPELLING_CANDIDATES}) t
         JOIN companies c ON c.id = t.rowid`,
      ),
      rankedSpelling: db.prepare(
        `SELECT c.core_key AS k, ${COMPANY_COLUMNS_SQL} FROM (SELECT rowid FROM companies_trigrams WHERE companies_trigrams MATCH ? ORDER BY rank LIMIT ${RANKED_SPELLING_CANDIDATES}) t
         JOIN companies c ON c.id = t.rowid`,
      ),
      // DO NOTHING covers both unique indexes: the domain, and the name key of domain-less rows.
      insert: db.prepare(`INSERT INTO companies (name_key, domain, ${VALUES}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`),
      updateByDomain: update('domain = ?'),
      // A company first imported without a domain is the same company when a later file gives it
      // one; without this it would be stored twice, once by name and once by domain.
      adopt: db.prepare(
        `UPDATE companies SET domain = ?, name_key = ?, (${VALUES}) = (?, ?, ?, ?, ?, ?, ?, ?)
          WHERE domain IS NULL AND name_key = ? AND NOT EXISTS (SELECT 1 FROM companies d WHERE d.domain = ?)`,
      ),
      updateByName: update('domain IS NULL AND name_key = ?'),
      // Answers cached before the import may now be wrong, and not only for the names imported:
      // a new company can become the better near match of any name. So the whole kind goes.
      forget: db.prepare('DELETE FROM result_cache WHERE kind = ?'),
    };
  }

  async byKey(column: CompanyKey, values: readonly string[]): Promise<Map<string, CompanyRow[]>> {
    const groups = new Map<string, CompanyRow[]>();
    if (values.length === 0) return groups;
    for (const { k, ...row } of this.stmts.byKey.get(column)!.all(JSON.stringify([...new Set(values)])) as KeyedRow[]) {
      const group = groups.get(k);
      if (group === undefined) groups.set(k, [row]);
      else group.push(row);
    }
    return groups;
  }

  /** Every word, quoted so that FTS5 reads none as syntax (`AND`, `NEAR`, `*`); the last also as a prefix. */
  async byWords(core: string, limit: number): Promise<CompanyRow[]> {
    const words = core.split(' ');
    const last = words.length - 1;
    const query = words.map((w, i) => (i === last && w.length >= 3 ? `${quote(w)}*` : quote(w))).join(' ');
    return this.stmts.words.all(query, limit) as CompanyRow[];
  }

  /**
   * Names that share at least half of the core name's pieces (`(A AND B) OR (A AND C) OR ...`)
   * as exact substrings. By pigeonhole, a name one edit away keeps all pieces but one; asking for
   * every trigram instead (`"glo" OR "lob" OR ...`) matches most of a large directory and is ten
   * times slower.
   */
  async spellingCandidates(core: string): Promise<KeyedRow[]> {
    const chars = [...core];
    // The trigram index cannot match fewer than 3 characters.
    if (chars.length < 3) return [];
    const query = atLeastHalf(spellingPieces(chars).map(quote));
    const rows = this.stmts.spelling.all(query) as KeyedRow[];
    return rows.length === SPELLING_CANDIDATES ? (this.stmts.rankedSpelling.all(query) as KeyedRow[]) : rows;
  }

  async upsert(records: readonly CompanyRecord[]): Promise<CompanyWrite> {
    return this.db
      .transaction((): CompanyWrite => {
        const write: CompanyWrite = { inserted: 0, updated: 0, unchanged: 0 };
        for (const r of records) {
          const values = [r.name, r.coreKey, r.description, r.industry, r.employeeCount, r.country, r.website, r.extra];
          if (r.domain !== null && this.stmts.adopt.run(r.domain, r.nameKey, ...values, r.nameKey, r.domain).changes > 0) {
            write.updated++;
            continue;
          }
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


/** An FTS5 query that any ceil(n/2) of the n terms satisfy. */
function atLeastHalf(terms: string[]): string {
  const need = Math.ceil(terms.length / 2);
  const clauses: string[] = [];
  const pick = (from: number, chosen: string[]): void => {
    if (chosen.length === need) {
      clauses.push(`(${chosen.join(' AND ')})`);
      return;
    }
    for (let i = from; i < terms.length; i++) pick(i + 1, [...chosen, terms[i]!]);
  };
  pick(0, []);
  return clauses.join(' OR ');
}

function quote(term: string): string {
  return `"${term.replaceAll('"', '""')}"`;
}
