import { PASSWORD_BREACHES_KIND, type PasswordBreachResult } from '../src/lookups/password/password-breach-provider.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import type { NormaliseResult, Pipeline } from './pipeline.js';

/** A SHA-1 as its key: 40 hex digits in upper case, as the range protocol writes them. */
export function normaliseSha1(raw: string): NormaliseResult {
  const value = raw.trim();
  if (value === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'empty SHA-1' };
  if (!/^[0-9A-Fa-f]{40}$/.test(value)) return { ok: false, code: ERROR_CODES.invalidSha1, message: 'a SHA-1 is 40 hex digits' };
  return { ok: true, key: value.toUpperCase() };
}

/**
 * The password breach check as the single-lookup path takes it: the key is the password's SHA-1,
 * so billing names it by a keyed hash of that and nothing else. Deliberately not in PIPELINES: a
 * bulk job would put a file of passwords in the object store, and its result file beside it.
 */
export const passwordBreachesPipeline: Pipeline<PasswordBreachResult> = {
  type: 'password_breaches',
  lookupKind: PASSWORD_BREACHES_KIND,
  keyHeader: 'sha1',
  keyAliases: [],
  headerless: false,
  normalise: normaliseSha1,
  resultColumns: ['breached', 'count'],
  resultCells: (result) => [String(result.breached), String(result.count)],
  isFound: (result) => result.breached,
};
