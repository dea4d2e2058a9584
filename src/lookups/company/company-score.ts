import { coreName } from './company-names.js';

/**
 * The confidence a candidate needs to count as found: only such candidates are returned, put in
 * the `found` export and billed. A one-letter typo in a name of nine letters or more passes
 * (`Microsft` ~ `Microsoft` is 0.89); a missing word (`Umbrella` ~ `Umbrella Holdings`, 0.67) or a
 * typo in a short name (`Globx` ~ `Globex`, 0.83) does not, as neither can be told from another
 * company of a similar name.
 */
export const COMPANY_MATCH_THRESHOLD = 0.85;

/** A candidate whose domain is a parent of the query's host (`shop.acme.com` finds `acme.com`). */
const PARENT_DOMAIN_SCORE = 0.95;
/** Names compared on their first characters only, as the spelling search reads them. */
const COMPARED_CHARS = 64;

export interface ScoredQuery {
  /** The host of a domain query; undefined for a name. */
  readonly domain: string | undefined;
  /** The text compared with candidate names: the name, or for a domain query the domain as written. */
  readonly name: string;
}

/**
 * How sure it is that `candidate` is the company `query` means, from 0 to 1, computed here from the
 * two alone so that both stores give the same score for the same directory:
 *
 * - the query's domain is the candidate's: 1; a parent of it: 0.95;
 * - else names, each reduced by `coreName` (case, accents, punctuation and a trailing legal form
 *   such as BV, GmbH, Inc, Ltd, LLC, SA or AG dropped): the better of word-set similarity (Dice
 *   over distinct words) and edit similarity of the words in sorted order (1 - Levenshtein
 *   distance / longer length), so word order and one-letter typos cost little;
 * - numbers are part of a name's identity: when the numbers in the two names differ
 *   (`Beta Labs 434` and `Beta Labs 4366`), the score is halved, which keeps it under any
 *   sensible threshold.
 */
export function companyScore(query: ScoredQuery, candidate: { name: string; domain: string | null }): number {
  if (query.domain !== undefined && candidate.domain !== null) {
    if (candidate.domain === query.domain) return 1;
    if (query.domain.endsWith(`.${candidate.domain}`)) return PARENT_DOMAIN_SCORE;
  }
  const a = words(query.name);
  const b = words(candidate.name);
  if (a.length === 0 || b.length === 0) return 0;
  const text = Math.max(wordDice(a, b), editSimilarity(sortedText(a), sortedText(b)));
  const score = sameNumbers(a, b) ? text : text / 2;
  return Math.round(score * 1000) / 1000;
}

function words(name: string): string[] {
  const core = coreName(name);
  return core === '' ? [] : core.split(' ');
}

function wordDice(a: readonly string[], b: readonly string[]): number {
  const left = new Set(a);
  const right = new Set(b);
  let common = 0;
  for (const w of left) if (right.has(w)) common++;
  return (2 * common) / (left.size + right.size);
}

function sortedText(ws: readonly string[]): string[] {
  return [...[...ws].sort().join(' ')].slice(0, COMPARED_CHARS);
}

function editSimilarity(a: readonly string[], b: readonly string[]): number {
  const longer = Math.max(a.length, b.length);
  return longer === 0 ? 1 : 1 - levenshtein(a, b) / longer;
}

/** Edit distance over characters (code points), one row at a time. */
function levenshtein(a: readonly string[], b: readonly string[]): number {
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(prev[j]! + 1, row[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    prev = row;
  }
  return prev[b.length]!;
}

/** The digit runs of both names, in order, are the same: `434` never stands for `4366`. */
function sameNumbers(a: readonly string[], b: readonly string[]): boolean {
  const numbers = (ws: readonly string[]) => ws.join(' ').match(/\p{N}+/gu)?.join(' ') ?? '';
  return numbers(a) === numbers(b);
}
