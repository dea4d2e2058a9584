import type { CompanyRow } from '../../storage/records.js';
import { COMPANY_KEYS, type CompaniesPort } from '../../storage/store.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { coreName, domainAndParents, nameKey, similarity, trigrams } from './company-names.js';
import { COMPANY_MATCH_THRESHOLD, companyScore } from './company-score.js';
import { COMPANY_KIND, COMPANY_MATCHES, profileOf, type CompanyMatch, type CompanyResult } from './company-profile.js';

export { COMPANY_KIND };

/** Candidates one answer carries at most (the agent endpoint charges per candidate). */
export const MAX_COMPANY_RESULTS = 5;
/**
 * Word-search candidates scored per key: more than are returned, as the store's ranking (bm25)
 * is not the score, and a confident candidate may rank under unconfident ones.
 */
const WORD_CANDIDATES = 20;
/** Trigram similarity (Dice) a spelling candidate needs: `globx` ~ `globex` is 0.57, `ibn` ~ `ibm` 0. */
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
 * Each stage's candidates are scored by `companyScore` (the same on every store) and only those
 * of at least COMPANY_MATCH_THRESHOLD count, best score first: a near miss such as `Beta Labs
 * 4366` for `Beta Labs 434 BV` is not an answer, and the next stage gets its turn.
 *
 * Stages 1 to 3 are one store read each per batch; 4 and 5 one or two per key still unanswered.
 * A key nothing matches is an answer too (`match: null`). Every order is fixed by the directory
 * alone (ties broken by row id, the store's word ranking deterministic), so the same directory
 * always gives the same answer, which a resumed job's output depends on.
 */
export class EmbeddedCompanyDirectory implements LookupProvider<CompanyResult> {
  readonly kind = COMPANY_KIND;
  readonly name = 'embedded-company';
  /** The store takes the keys as one bound list, so there is no host-parameter limit to mind. */
  readonly maxBatch = 1_000;

  constructor(private readonly companies: CompaniesPort) {}

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<CompanyResult>[]> {
    signal?.throwIfAborted();
    const queries = keys.map(parseKey);
    const answers = new Map<string, CompanyResult>();
    // A stage whose candidates all score under the threshold has found nothing: the next one tries.
    const answer = (q: Query, match: CompanyMatch, rows: CompanyRow[]) => {
      const results = rows
        .map((row) => profileOf(row, companyScore(q, row)))
        .filter((c) => c.score! >= COMPANY_MATCH_THRESHOLD)
        .sort((a, b) => b.score! - a.score!)
        .slice(0, MAX_COMPANY_RESULTS);
      if (results.length > 0) answers.set(q.key, { match, results });
    };
    const open = () => queries.filter((q) => !answers.has(q.key));

    const withDomain = queries.filter((q) => q.domain !== undefined);
    const byDomain = await this.companies.byKey(COMPANY_KEYS.domain, withDomain.flatMap((q) => domainAndParents(q.domain!)));
    for (const q of withDomain) {
      const host = domainAndParents(q.domain!).find((h) => byDomain.has(h));
      if (host !== undefined) answer(q, COMPANY_MATCHES.domain, byDomain.get(host)!);
    }
    const byName = await this.companies.byKey(COMPANY_KEYS.name, open().map((q) => nameKey(q.name)));
    for (const q of open()) {
      const rows = byName.get(nameKey(q.name));
      if (rows) answer(q, COMPANY_MATCHES.name, rows);
    }
    const byCore = await this.companies.byKey(COMPANY_KEYS.core, open().map((q) => coreName(q.name)).filter((c) => c !== ''));
    for (const q of open()) {
      const rows = byCore.get(coreName(q.name));
      if (rows) answer(q, COMPANY_MATCHES.near, rows);
    }
    for (const q of open()) {
      if (!q.fuzzy) continue;
      const core = coreName(q.name);
      if (core === '') continue;
      answer(q, COMPANY_MATCHES.near, await this.companies.byWords(core, WORD_CANDIDATES));
      if (!answers.has(q.key)) answer(q, COMPANY_MATCHES.near, await this.bySpelling(core));
    }
    return keys.map((key) => ({ ok: true, result: answers.get(key) ?? { match: null, results: [] } }));
  }

  /**
   * Names spelt nearly like the core name, best first. The store only narrows the directory down
   * to candidates; this trigram similarity, whatever the adapter, drops the far ones before
   * `companyScore` decides.
   */
  private async bySpelling(core: string): Promise<CompanyRow[]> {
    const chars = [...core].slice(0, TRIGRAM_CHARS);
    const rows = await this.companies.spellingCandidates(chars.join(''));
    const wanted = trigrams(chars.join(''));
    return rows
      .map((row) => ({ row, score: similarity(wanted, trigrams([...row.k].slice(0, TRIGRAM_CHARS).join(''))) }))
      .filter((c) => c.score >= MIN_SIMILARITY)
      .sort((a, b) => b.score - a.score || a.row.id - b.row.id)
      .map((c) => c.row);
  }
}

function parseKey(key: string): Query {
  if (key.startsWith('domain:')) {
    const domain = key.slice('domain:'.length);
    return { key, domain, name: domain, fuzzy: false };
  }
  return { key, domain: undefined, name: key.startsWith('name:') ? key.slice('name:'.length) : key, fuzzy: true };
}
