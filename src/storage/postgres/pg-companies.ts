import { COMPANY_KIND, spellingPieces } from '../directory-rules.js';
import type { CompanyRecord, CompanyRow, CompanyWrite } from '../records.js';
import { COMPANY_KEYS, type CompaniesPort, type CompanyKey } from '../store.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';


const COMPANY_COLUMNS_SQL = 'c.id, c.name, c.domain, c.description, c.industry, c.employee_count, c.country, c.website, c.extra';
const VALUES = 'name, core_key, description, industry, employee_count, country, website, extra';

/** Spelling candidates returned at most, the most similar first. */
const SPELLING_CANDIDATES = 500;
/** The characters the lookup compares (its TRIGRAM_CHARS): candidates are ordered by these. */
const TRIGRAM_CHARS = 64;

type KeyedRow = CompanyRow & { k: string };

/**
 * The company directory in table `companies`, with a full-text index (words) and a trigram index
 * (spelling) over `core_key`. A company is the same company when it has the same domain, or,
 * without a domain, the same name key; a record with a domain that no company has yet takes over
 * the domain-less company of its name key, if any; a record for one already stored replaces its values, so
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
   * Names that hold at least half of the core name's pieces as substrings, as SQLite asks its
   * trigram index (the same pieces), and names that hold a swap of two letters across a piece
   * boundary. Half the pieces survive any one edit but such a swap, which breaks two pieces: with
   * 2 or 3 pieces too few are left, and SQLite misses those names although they pass the lookup's
   * bar. The most similar first by pg_trgm on the first TRIGRAM_CHARS characters, then id.
   */
  async spellingCandidates(core: string): Promise<KeyedRow[]> {
    const chars = [...core].slice(0, TRIGRAM_CHARS);
    // As SQLite's trigram index, which cannot match fewer than 3 characters.
    if (chars.length < 3) return [];
    const params = new Map<string, number>();
    const like = (piece: string) => {
      const pattern = `%${escapeLike(piece)}%`;
      if (!params.has(pattern)) params.set(pattern, params.size + 2);
      return `c.core_key LIKE $${params.get(pattern)!}`;
    };
    const where = spellingClauses(chars)
      .map((clause) => `(${clause.map(like).join(' AND ')})`)
      .join(' OR ');
    const { rows } = await this.db.query<KeyedRow>(
      `SELECT c.core_key AS k, ${COMPANY_COLUMNS_SQL} FROM companies c
        WHERE ${where}
        ORDER BY similarity(left(c.core_key, ${TRIGRAM_CHARS}), $1) DESC, c.id
        LIMIT ${SPELLING_CANDIDATES}`,
      [chars.join(''), ...params.keys()],
    );
    return rows;
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
  // A company first imported without a domain is the same company when a later file gives it one;
  // without this it would be stored twice. READ COMMITTED: two imports adopting the same row queue
  // on its lock, and the second, re-checking `domain IS NULL`, falls through to the update by
  // domain. Only an import inserting the same domain at that moment can make this fail (23505,
  // not retried): the batch is refused whole, and running the import again updates in place.
  if (r.domain !== null) {
    const adopted = await tx.query(
      `UPDATE companies SET domain = $10, name_key = $1, (${VALUES}) = ROW($2, $3, $4, $5, $6::bigint, $7, $8, $9)
        WHERE domain IS NULL AND name_key = $1 AND NOT EXISTS (SELECT 1 FROM companies d WHERE d.domain = $10)`,
      [r.nameKey, ...values, r.domain],
    );
    if (adopted.rowCount > 0) return 'updated';
  }
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

/**
 * Each clause is a set of substrings a candidate must all hold: every ceil(n/2) of the n pieces,
 * and for 2 or 3 pieces each pair of neighbours with the letters at their boundary swapped, with
 * the other piece.
 */
function spellingClauses(chars: string[]): string[][] {
  const parts = spellingPieces(chars);
  const need = Math.ceil(parts.length / 2);
  const clauses: string[][] = [];
  const pick = (from: number, chosen: string[]): void => {
    if (chosen.length === need) {
      clauses.push(chosen);
      return;
    }
    for (let i = from; i < parts.length; i++) pick(i + 1, [...chosen, parts[i]!]);
  };
  pick(0, []);
  if (chars.length >= 6 && parts.length <= 3) {
    for (let i = 0; i + 1 < parts.length; i++) {
      const left = [...parts[i]!];
      const right = [...parts[i + 1]!];
      const swapped = [...left.slice(0, -1), right[0]!, left[left.length - 1]!, ...right.slice(1)].join('');
      clauses.push([swapped, ...parts.filter((_, j) => j !== i && j !== i + 1)]);
    }
  }
  return clauses;
}


function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (m) => `\\${m}`);
}

/** A tsquery operand in quotes: a quote or backslash inside is doubled, so nothing in it is syntax. */
function quote(word: string): string {
  return `'${word.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}
