import type { GenderResult } from '../src/lookups/gender/embedded-gender-engine.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import { unwrapCell } from './cell-text.js';
import { EMAIL_ALIASES } from './key-aliases.js';
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

const MAILTO = /^mailto:/i;
const QUOTED = /"[^"]*"/g;

/**
 * The one address in an email cell, as mail clients, CRMs and web pages export it, or a row error:
 *
 * - `jane@example.com`, with invisible blanks or quote marks around it (`unwrapCell`);
 * - `Jane Doe <jane@example.com>` and `"Doe, Jane" <jane@example.com>`: the address in the angle
 *   brackets (a display name may be the address itself, as Outlook writes it);
 * - `mailto:jane@example.com?subject=Hi`, any case of `mailto:`, percent-escapes decoded, the
 *   query dropped;
 * - two or more different addresses (`a@x.com, b@y.com`, `a@x.com; Bob <b@y.com>`) are
 *   `multiple_addresses`: which one to look up (and charge) would be a guess.
 *
 * Everything else goes to `isValidEmail` as it stands, so `a@b@example.com` stays `invalid_email`.
 */
export function normaliseEmail(raw: string): NormaliseResult {
  let text = unwrapCell(raw);
  if (text === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'the email cell is empty' };
  const mailto = fromMailto(text);
  if (mailto === undefined) return invalidEmail();
  text = mailto;
  const words = addressWords(text);
  // Outlook writes `jane@example.com <jane@example.com>`: one mailbox, its address as its name.
  const named = words.length === 2 && words[0] === words[1] && text.endsWith('>');
  if (words.length > 1 && !named) {
    return { ok: false, code: ERROR_CODES.multipleAddresses, message: 'the cell holds more than one email address; give one per row' };
  }
  const open = text.lastIndexOf('<');
  if (open >= 0 && text.endsWith('>')) {
    const display = text.slice(0, open);
    if (/[<>]/.test(display)) return invalidEmail();
    const inner = fromMailto(unwrapCell(text.slice(open + 1, -1)));
    if (inner === undefined) return invalidEmail();
    text = inner;
  }
  if (!isValidEmail(text)) return invalidEmail();
  return { ok: true, key: text.toLowerCase() };
}

/** The address of a `mailto:` URI (RFC 6068), or the text itself; undefined for a bad escape. */
function fromMailto(text: string): string | undefined {
  if (!MAILTO.test(text)) return text;
  const query = text.indexOf('?');
  try {
    return decodeURIComponent(text.slice('mailto:'.length, query < 0 ? undefined : query)).trim();
  } catch {
    return undefined;
  }
}

/** Address-like words outside quoted display names, in lower case. */
function addressWords(text: string): string[] {
  const words = text.replace(QUOTED, ' ').split(/[\s,;<>]+/u);
  return words.filter((w) => w.includes('@')).map((w) => w.toLowerCase());
}

function invalidEmail(): NormaliseResult {
  return { ok: false, code: ERROR_CODES.invalidEmail, message: 'not a valid email address' };
}

/** Job type `gender`: one email per row, answered with gender, country and probability. */
export const genderPipeline: Pipeline<GenderResult> = {
  type: 'gender',
  lookupKind: 'gender',
  keyHeader: 'email',
  keyAliases: EMAIL_ALIASES,
  headerless: true,
  normalise: normaliseEmail,
  resultColumns: ['gender', 'country', 'probability'],
  resultCells(result: GenderResult): string[] {
    return [result.gender, result.country ?? '', String(Math.round(result.probability))];
  },
  isFound(result: GenderResult): boolean {
    return result.gender !== 'unknown';
  },
};
