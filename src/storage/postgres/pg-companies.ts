import type { CompanyRecord, CompanyRow, CompanyWrite } from '../records.js';
import { COMPANY_KEYS, type CompaniesPort, type CompanyKey } from '../store.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

/** The result-cache kind of company answers; must equal the lookup's COMPANY_KIND. */
const COMPANY_KIND = 'company';

const COMPANY_COLUMNS_SQL = 'c.id, c.name, c.domain, c.description, c.industry, c.employee_count, c.country, c.website, c.extra';
const VALUES = 'name, core_key, description, industry, employee_count, country, website, extra';

/** Spelling candidates returned at most, the most similar first. */
const SPELLING_CANDIDATES = 500;
/**
 * The characters the lookup compares (its TRIGRAM_CHARS), and what the trigram index covers: a
 * name one typo away must not be kept out by a long tail the caller never looks at.
 */
const TRIGRAM_CHARS = 64;
/**
 * pg_trgm similarity a spelling candidate needs. The lookup keeps a name at trigram Dice 0.5 or
 * more, but pg_trgm counts other trigrams (per word, padded with blanks), so that bar maps to no
 * single pg_trgm value: over every one-edit pair of 6 to 11 characters on small alphabets that
 * passes Dice 0.5, the lowest pg_trgm similarity is 0.2 (`abbbbb` ~ `cbbbbb`). Just under it, so
 * that float rounding cannot drop such a pair.
 */
const SPELLING_THRESHOLD = 0.19;

type KeyedRow = CompanyRow & { k: string };

/**
 * The company directory in table `companies`, with a full-text index (words) and a trigram index
 * (spelling) over `core_key`. A company is the same company when it has the same domain, or,
 * without a domain, the same name key; a record for one already stored replaces its values, so
 * importing the same file twice changes nothing and a corrected file updates in place.
 */
export class PgCompanies implements CompaniesPort {
  constructor(private readonly db: PgDatabase) {}

  async byKey(column: CompanyKey, values: readonly string[]): Promise<Map<string, CompanyRow[]>> {
    const groups = new Map<string, CompanyRow[]>();
    if (values.length === 0) return groups;
    // Interpolated below: only the three known column names may get there.
    if (!Object.values(COMPANY_KEYS).includes(column)) throw new Error(`not a company key column: ${column}`);
    const { rows } = await this.db.query<KeyedRow>(
      `SELECT c.${column} AS k, ${COMPANY_COLUMNS_SQL} FROM companies c WHERE c.${column} = ANY($1::text[])
       ORDER BY c.${column} COLLATE "C", c.employee_count IS NULL, c.employee_count DESC, c.id`,
      [[...new Set(values)]],
    );
    for (const { k, ...row } of rows) {
      const group = groups.get(k);
      if (group === undefined) groups.set(k, [row]);
      else group.push(row);
    }
    return groups;
  }

  /**
   * Every word, the last also as a prefix when it has 3 characters or more, each quoted so that
   * none is read as tsquery syntax (`&`, `!`, `:*`).
   *
   * Ranked as SQLite's bm25 ranks these matches without needing its table-wide statistics: every
   * match holds every query word, so all share the same IDF sum and bm25 falls as the name gets
   * longer; fewer words first, then more hits (each name word counted once per query word it
   * matches), then id. The same order as SQLite whenever no candidate repeats a query word (or
   * its prefix) within its name.
   */
  async byWords(core: string, limit: number): Promise<CompanyRow[]> {
    const words = core.split(' ').filter((w) => w !== '');
    if (words.length === 0) return [];
    const last = words[words.length - 1]!;
    const prefix = last.length >= 3 ? last : null;
    const exact = prefix === null ? words : words.slice(0, -1);
    const query = words.map((w, i) => (i === words.length - 1 && prefix !== null ? `${quote(w)}:*` : quote(w))).join(' & ');
    const { rows } = await this.db.query<CompanyRow>(
      `SELECT ${COMPANY_COLUMNS_SQL} FROM companies c,
         LATERAL (SELECT count(*) AS words,
                         sum(cardinality(array_positions($2::text[], w)) + (starts_with(w, $3) IS TRUE)::int) AS hits
                    FROM unnest(array_remove(string_to_array(c.core_key, ' '), '')) AS w) s
        WHERE to_tsvector('simple', c.core_key) @@ to_tsquery('simple', $1)
        ORDER BY s.words, s.hits DESC, c.id
        LIMIT $4`,
      [query, exact, prefix, limit],
    );
    return rows;
  }

  /**
   * Names near `core` in trigram similarity (pg_trgm, on the first TRIGRAM_CHARS characters), the
   * most similar first, then id. The lookup re-scores them with its own trigram Dice.
   */
  async spellingCandidates(core: string): Promise<KeyedRow[]> {
    const head = [...core].slice(0, TRIGRAM_CHARS).join('');
    // As SQLite's trigram index, which cannot match fewer than 3 characters.
    if ([...head].length < 3) return [];
    return this.db.transaction(async (tx) => {
      // Local to this transaction: the pooled connection goes back with the default threshold.
      await tx.query("SELECT set_config('pg_trgm.similarity_threshold', $1, true)", [String(SPELLING_THRESHOLD)]);
      const { rows } = await tx.query<KeyedRow>(
        `SELECT c.core_key AS k, ${COMPANY_COLUMNS_SQL} FROM companies c
          WHERE left(c.core_key, ${TRIGRAM_CHARS}) % $1
          ORDER BY similarity(left(c.core_key, ${TRIGRAM_CHARS}), $1) DESC, c.id
          LIMIT ${SPELLING_CANDIDATES}`,
        [head],
      );
      return rows;
    });
  }

  /**
   * One transaction per batch. Each record is an insert, or else an update whose IS DISTINCT FROM
   * guard leaves identical rows alone, so the row count tells an update from a no-op exactly as
   * SQLite's IS NOT does. An import racing this one on the same company waits on its row.
   */
  async upsert(records: readonly CompanyRecord[]): Promise<CompanyWrite> {
    return this.db.transaction(async (tx) => {
      const write: CompanyWrite = { inserted: 0, updated: 0, unchanged: 0 };
      for (const r of records) {
        const outcome = await upsertOne(tx, r);
        write[outcome]++;
      }
      // Answers cached before the import may now be wrong, and not only for the names imported:
      // a new company can become the better near match of any name. So the whole kind goes.
      if (write.inserted + write.updated > 0) await tx.query('DELETE FROM result_cache WHERE kind = $1', [COMPANY_KIND]);
      return write;
    });
  }
}

async function upsertOne(tx: PgQueryable, r: CompanyRecord): Promise<keyof CompanyWrite> {
  const values = [r.name, r.coreKey, r.description, r.industry, r.employeeCount, r.country, r.website, r.extra];
  // DO NOTHING covers both unique indexes: the domain, and the name key of domain-less rows.
  const inserted = await tx.query(
    `INSERT INTO companies (name_key, domain, ${VALUES}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT DO NOTHING`,
    [r.nameKey, r.domain, ...values],
  );
  if (inserted.rowCount > 0) return 'inserted';
  const where = r.domain === null ? 'domain IS NULL AND name_key = $1' : 'domain = $10';
  const updated = await tx.query(
    `UPDATE companies SET name_key = $1, (${VALUES}) = ROW($2, $3, $4, $5, $6::bigint, $7, $8, $9)
      WHERE ${where} AND (name_key, ${VALUES}) IS DISTINCT FROM ($1, $2, $3, $4, $5, $6::bigint, $7, $8, $9)`,
    [r.nameKey, ...values, ...(r.domain === null ? [] : [r.domain])],
  );
  return updated.rowCount > 0 ? 'updated' : 'unchanged';
}

/** A tsquery operand in quotes: a quote or backslash inside is doubled, so nothing in it is syntax. */
function quote(word: string): string {
  return `'${word.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}
