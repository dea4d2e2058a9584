import type { Db } from '../../storage/sqlite/open-database.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { coreName, domainAndParents, nameKey, similarity, trigrams } from './company-names.js';
import {
  COMPANY_COLUMNS_SQL,
  COMPANY_KIND,
  COMPANY_MATCHES,
  profileOf,
  type CompanyMatch,
  type CompanyResult,
  type CompanyRow,
} from './company-profile.js';

export { COMPANY_KIND };

/** Candidates one answer carries at most (the agent endpoint charges per candidate). */
export const MAX_COMPANY_RESULTS = 5;
/**
 * Spelling candidates re-scored in JS. All of them when there are no more than this; else the
 * best this many by bm25, which costs more because every candidate must be ranked.
 */
const SPELLING_CANDIDATES = 500;
const RANKED_SPELLING_CANDIDATES = 100;
/** Trigram similarity (Dice) a spelling variant needs: `globx` ~ `globex` is 0.57, `ibn` ~ `ibm` 0. */
const MIN_SIMILARITY = 0.5;
/** A longer name is matched on its start: past this, a typo is not what keeps it from matching. */
const TRIGRAM_CHARS = 64;

interface Query {
  key: string;
  domain: string | undefined;
  /** The text the name stages compare: the name, or for a domain key the domain as written. */
  name: string;
  /** Word and spelling matches; not for domains, whose words (`acme`, `com`) would match anything. */
  fuzzy: boolean;
}

type KeyedRow = CompanyRow & { k: string };

/**
 * Answers `company` keys (`domain:acme.com`, `name:acme inc`, as the pipeline makes them) from the
 * directory that `sluice import companies` loads. In order, the first stage that finds anything wins:
 *
 * 1. domain keys: the domain, else its nearest parent (`eu.acme.com` → `acme.com`);
 * 2. the name as written, any case (a domain key's text too, for names such as `E.ON`);
 * 3. the core name: legal form and punctuation dropped on both sides (`ACME, Inc.` = `Acme`);
 * 4. name keys only: every word of the core name, the last as a prefix, ranked by bm25;
 * 5. name keys only: names that share half the core name's pieces, re-scored by trigram
 *    similarity (spelling mistakes).
 *
 * Stages 1 to 3 are one query each per batch; 4 and 5 one or two FTS5 queries per key still
 * unanswered. A key nothing matches is an answer too (`match: null`). Every order is fixed by the
 * directory alone (ties broken by row id, FTS5's ranking deterministic), so the same directory
 * always gives the same answer, which a resumed job's output depends on.
 */
export class EmbeddedCompanyDirectory implements LookupProvider<CompanyResult> {
  readonly kind = COMPANY_KIND;
  readonly name = 'embedded-company';
  /** json_each takes the keys as one bound parameter, so there is no host-parameter limit to mind. */
  readonly maxBatch = 1_000;
  private readonly stmts;

  constructor(db: Db) {
    const grouped = (column: string) =>
      db.prepare(
        `SELECT c.${column} AS k, ${COMPANY_COLUMNS_SQL} FROM companies c WHERE c.${column} IN (SELECT value FROM json_each(?))
         ORDER BY c.${column}, c.employee_count IS NULL, c.employee_count DESC, c.id`,
      );
    this.stmts = {
      byDomain: grouped('domain'),
      byName: grouped('name_key'),
      byCore: grouped('core_key'),
      // Ranked inside the FTS5 query (`rank` is bm25), then joined: ranking the join instead is
      // several times slower for a common word that thousands of names share.
      words: db.prepare(
        `SELECT ${COMPANY_COLUMNS_SQL} FROM (SELECT rowid, rank FROM companies_words WHERE companies_words MATCH ? ORDER BY rank LIMIT ${MAX_COMPANY_RESULTS}) w
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
    };
  }

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<CompanyResult>[]> {
    signal?.throwIfAborted();
    const queries = keys.map(parseKey);
    const answers = new Map<string, CompanyResult>();
    const answer = (key: string, match: CompanyMatch, rows: CompanyRow[]) =>
      answers.set(key, { match, results: rows.slice(0, MAX_COMPANY_RESULTS).map(profileOf) });
    const open = () => queries.filter((q) => !answers.has(q.key));

    const withDomain = queries.filter((q) => q.domain !== undefined);
    const byDomain = this.grouped(this.stmts.byDomain, withDomain.flatMap((q) => domainAndParents(q.domain!)));
    for (const q of withDomain) {
      const host = domainAndParents(q.domain!).find((h) => byDomain.has(h));
      if (host !== undefined) answer(q.key, COMPANY_MATCHES.domain, byDomain.get(host)!);
    }
    const byName = this.grouped(this.stmts.byName, open().map((q) => nameKey(q.name)));
    for (const q of open()) {
      const rows = byName.get(nameKey(q.name));
      if (rows) answer(q.key, COMPANY_MATCHES.name, rows);
    }
    const byCore = this.grouped(this.stmts.byCore, open().map((q) => coreName(q.name)).filter((c) => c !== ''));
    for (const q of open()) {
      const rows = byCore.get(coreName(q.name));
      if (rows) answer(q.key, COMPANY_MATCHES.near, rows);
    }
    for (const q of open()) {
      if (!q.fuzzy) continue;
      const core = coreName(q.name);
      if (core === '') continue;
      const rows = this.byWords(core);
      const near = rows.length > 0 ? rows : this.bySpelling(core);
      if (near.length > 0) answer(q.key, COMPANY_MATCHES.near, near);
    }
    return keys.map((key) => ({ ok: true, result: answers.get(key) ?? { match: null, results: [] } }));
  }

  private grouped(stmt: ReturnType<Db['prepare']>, values: string[]): Map<string, CompanyRow[]> {
    const groups = new Map<string, CompanyRow[]>();
    if (values.length === 0) return groups;
    for (const row of stmt.all(JSON.stringify([...new Set(values)])) as KeyedRow[]) {
      const group = groups.get(row.k);
      if (group === undefined) groups.set(row.k, [row]);
      else group.push(row);
    }
    return groups;
  }

  /** Every word, quoted so that FTS5 reads none as syntax (`AND`, `NEAR`, `*`); the last also as a prefix. */
  private byWords(core: string): CompanyRow[] {
    const words = core.split(' ');
    const last = words.length - 1;
    const query = words.map((w, i) => (i === last && w.length >= 3 ? `${quote(w)}*` : quote(w))).join(' ');
    return this.stmts.words.all(query) as CompanyRow[];
  }

  /**
   * Names that share at least half of the core name's pieces (`(A AND B) OR (A AND C) OR ...`)
   * as exact substrings, re-scored by trigram similarity. By pigeonhole, a name one edit away
   * keeps all pieces but one; asking for every trigram instead (`"glo" OR "lob" OR ...`) matches
   * most of a large directory and is ten times slower.
   */
  private bySpelling(core: string): CompanyRow[] {
    const chars = [...core].slice(0, TRIGRAM_CHARS);
    // The trigram index cannot match fewer than 3 characters.
    if (chars.length < 3) return [];
    const query = atLeastHalf(pieces(chars).map(quote));
    let rows = this.stmts.spelling.all(query) as KeyedRow[];
    if (rows.length === SPELLING_CANDIDATES) rows = this.stmts.rankedSpelling.all(query) as KeyedRow[];
    const wanted = trigrams(chars.join(''));
    return rows
      .map((row) => ({ row, score: similarity(wanted, trigrams([...row.k].slice(0, TRIGRAM_CHARS).join(''))) }))
      .filter((c) => c.score >= MIN_SIMILARITY)
      .sort((a, b) => b.score - a.score || a.row.id - b.row.id)
      .map((c) => c.row);
  }
}

/**
 * The core name cut into 2 to 4 pieces of at least 3 characters; a name shorter than 6 into its
 * first and last 3 (which overlap).
 */
function pieces(chars: string[]): string[] {
  const n = chars.length;
  if (n < 6) return [...new Set([chars.slice(0, 3).join(''), chars.slice(n - 3).join('')])];
  const count = Math.min(4, Math.floor(n / 3));
  return Array.from({ length: count }, (_, i) => chars.slice(Math.floor((i * n) / count), Math.floor(((i + 1) * n) / count)).join(''));
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

function parseKey(key: string): Query {
  if (key.startsWith('domain:')) {
    const domain = key.slice('domain:'.length);
    return { key, domain, name: domain, fuzzy: false };
  }
  return { key, domain: undefined, name: key.startsWith('name:') ? key.slice('name:'.length) : key, fuzzy: true };
}
