import type { GenderResult } from '../src/lookups/gender/embedded-gender-engine.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import type { NormaliseResult, Pipeline } from './pipeline.js';

const ATEXT = "[a-z0-9!#$%&'*+/=?^_`{|}~-]+";
const LOCAL_PART = new RegExp(`^${ATEXT}(?:\\.${ATEXT})*$`, 'i');
const LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/i;
const TLD = /^(?:[a-z]{2,63}|xn--[a-z0-9-]{1,59})$/i;

/**
 * A pragmatic address check, stricter than RFC 5322 where the RFC allows what no mailbox uses:
 *
 * - local part: a dot-atom (RFC 5322 atext, no leading, trailing or doubled dots), at most 64
 *   octets (RFC 5321); quoted local parts (`"john doe"@x.com`) are refused;
 * - exactly one `@`;
 * - domain: at least two LDH labels of 1 to 63 characters that neither start nor end with a hyphen,
 *   the last one alphabetic (2+ letters) or punycode (`xn--`); IP literals (`[192.0.2.1]`),
 *   trailing dots and Unicode (non-punycode) domains are refused;
 * - at most 254 characters in all (RFC 5321 path limit less the angle brackets).
 *
 * Everything is ASCII, so characters and octets are the same count.
 */
export function isValidEmail(address: string): boolean {
  if (address.length > 254) return false;
  const at = address.indexOf('@');
  if (at < 1 || at !== address.lastIndexOf('@')) return false;
  const local = address.slice(0, at);
  if (local.length > 64 || !LOCAL_PART.test(local)) return false;
  const labels = address.slice(at + 1).split('.');
  if (labels.length < 2) return false;
  for (const label of labels) if (!LABEL.test(label)) return false;
  return TLD.test(labels[labels.length - 1]!);
}

/** Job type `gender`: one email per row, answered with gender, country and probability. */
export const genderPipeline: Pipeline<GenderResult> = {
  type: 'gender',
  lookupKind: 'gender',
  keyHeader: 'email',
  headerless: true,
  normalise(raw: string): NormaliseResult {
    const address = raw.trim();
    if (address === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'the email cell is empty' };
    if (!isValidEmail(address)) return { ok: false, code: ERROR_CODES.invalidEmail, message: 'not a valid email address' };
    return { ok: true, key: address.toLowerCase() };
  },
  resultColumns: ['gender', 'country', 'probability'],
  resultCells(result: GenderResult): string[] {
    return [result.gender, result.country ?? '', String(Math.round(result.probability))];
  },
  isFound(result: GenderResult): boolean {
    return result.gender !== 'unknown';
  },
};
