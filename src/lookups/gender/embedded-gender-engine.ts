import { createRequire } from 'node:module';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { firstNameFromEmail } from './first-name.js';

/** Spec 4.3 without the billing fields, which the engine adds. */
export interface GenderResult {
  gender: 'male' | 'female' | 'unknown';
  /** ISO 3166-1 alpha-2, or null. */
  country: string | null;
  /** 0 to 100. */
  probability: number;
}

export interface ListVote {
  gender: 'male' | 'female';
  /** Country of the list, null for a list that mixes countries. */
  country: string | null;
}

/**
 * The name lists of the npm package `gender-detection-from-name` (MIT), one per language. The
 * English list gathers names from many countries, so it names none.
 */
const NAME_LISTS = [
  { lang: 'en', country: null },
  { lang: 'it', country: 'IT' },
  { lang: 'es', country: 'ES' },
  { lang: 'fr', country: 'FR' },
  { lang: 'de', country: 'DE' },
  { lang: 'tr', country: 'TR' },
] as const;

const UNKNOWN: GenderResult = Object.freeze({ gender: 'unknown', country: null, probability: 0 });

/**
 * The embedded gender estimate for one first name, from the lists that contain it:
 *
 * - gender: the verdict most lists give; `unknown` when the lists tie or none has the name;
 * - probability: Laplace's rule of succession over the lists, `round(100 * (agree + 1) / (lists + 2))`,
 *   where `agree` of `lists` lists give the verdict: one list gives 67, two agreeing lists 75, all
 *   six 88, and 3 of 5 gives 57; `unknown` has probability 0;
 * - country: the ISO code of the list's country when exactly one list has the name (the English
 *   list names no country), else null.
 *
 * Each list is one vote of equal weight. The lists record a name's usual gender, not how many
 * people of each gender carry it, so the probability measures how far the lists agree and how
 * many of them know the name; it is not the share of bearers who are male or female.
 */
export function estimateGender(votes: readonly ListVote[]): GenderResult {
  let male = 0;
  for (const vote of votes) if (vote.gender === 'male') male++;
  const female = votes.length - male;
  if (male === female) return UNKNOWN;
  const agree = Math.max(male, female);
  return {
    gender: male > female ? 'male' : 'female',
    country: votes.length === 1 ? votes[0]!.country : null,
    probability: Math.round((100 * (agree + 1)) / (votes.length + 2)),
  };
}

/**
 * Answers from the lists shipped in the package, in memory: keys are normalised emails, the first
 * name comes from `firstNameFromEmail`, and an address without one is `unknown`. Nothing here can
 * fail per key, so every outcome is ok.
 */
export class EmbeddedGenderEngine implements LookupProvider<GenderResult> {
  readonly kind = 'gender';
  readonly name = 'embedded-gender';
  readonly maxBatch = 10_000;
  readonly answersLocally = true;

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<GenderResult>[]> {
    signal?.throwIfAborted();
    const table = genderTable();
    return keys.map((key) => {
      const name = firstNameFromEmail(key);
      return (name === undefined ? undefined : table.get(name)) ?? UNKNOWN_OUTCOME;
    });
  }
}

/** The estimate for a bare first name (lower-case ASCII letters), as the engine gives it. */
export function genderOfFirstName(name: string): GenderResult {
  const outcome = genderTable().get(name);
  return outcome === undefined ? UNKNOWN : outcome.result;
}

type Outcome = LookupOutcome<GenderResult> & { ok: true };

const UNKNOWN_OUTCOME: Outcome = Object.freeze({ ok: true, result: UNKNOWN });

/** Built on first use and shared: it is immutable data, some 55,000 names. */
let table: Map<string, Outcome> | undefined;

function genderTable(): Map<string, Outcome> {
  if (table !== undefined) return table;
  const require = createRequire(import.meta.url);
  const votesByName = new Map<string, ListVote[]>();
  for (const { lang, country } of NAME_LISTS) {
    const raw: unknown = require(`gender-detection-from-name/names/${lang}.js`);
    if (!(raw instanceof Map)) {
      throw new AppError(ERROR_CODES.internal, `gender-detection-from-name/names/${lang}.js is not a Map`);
    }
    const listVotes = { male: { gender: 'male', country }, female: { gender: 'female', country } } as const;
    for (const [name, gender] of foldList(raw as Map<unknown, unknown>)) {
      const vote = listVotes[gender];
      const votes = votesByName.get(name);
      if (votes === undefined) votesByName.set(name, [vote]);
      else votes.push(vote);
    }
  }
  const built = new Map<string, Outcome>();
  for (const [name, votes] of votesByName) {
    const result = estimateGender(votes);
    if (result !== UNKNOWN) built.set(name, Object.freeze({ ok: true, result: Object.freeze(result) }));
  }
  table = built;
  return built;
}

const PLAIN_NAME = /^[a-z]+$/;
const DIACRITICS = /\p{M}+/gu;

/**
 * One list as single-word ASCII names, since that is all an email address can spell: `andré`
 * also counts for `andre` unless the list has `andre` itself, and a list whose accented spellings
 * fold to one name with both genders abstains on it. Multi-word and hyphenated entries are dropped.
 */
function foldList(raw: Map<unknown, unknown>): Map<string, 'male' | 'female'> {
  const exact = new Map<string, 'male' | 'female'>();
  const folded = new Map<string, 'male' | 'female' | 'conflict'>();
  for (const [rawName, gender] of raw) {
    if (typeof rawName !== 'string' || (gender !== 'male' && gender !== 'female')) continue;
    const name = rawName.toLowerCase();
    if (PLAIN_NAME.test(name)) {
      exact.set(name, gender);
      continue;
    }
    const plain = name.normalize('NFD').replace(DIACRITICS, '');
    if (!PLAIN_NAME.test(plain)) continue;
    const seen = folded.get(plain);
    folded.set(plain, seen === undefined || seen === gender ? gender : 'conflict');
  }
  for (const [name, gender] of folded) {
    if (gender !== 'conflict' && !exact.has(name)) exact.set(name, gender);
  }
  return exact;
}
