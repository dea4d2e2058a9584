// The max metadata rather than the default min: min checks a number's length only, max also checks
// its digits against each country's number plan (e.g. Brazil's +55 11 9104 7514, a length that
// exists but a range that does not). An invalid row is free and never looked up, so the precise
// check is what keeps customers from paying for junk. Both parse at about the same speed here
// (parsing, not validation, dominates); max is 145 kB instead of 80 kB, which a server never
// notices. The price of precision: a range allocated after the package's metadata was built reads
// as invalid until the dependency is updated. Imports use the same rule, so the index and lookups
// always agree on what a valid number is.
import { isSupportedCountry, parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';
import type { PhoneBreachResult } from '../src/lookups/phone/embedded-breach-index.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import type { NormaliseOptions, NormaliseResult, Pipeline } from './pipeline.js';

/**
 * Digits, blanks and the punctuation people write numbers with: `+49 (0)30 123-4567`,
 * `(+49) 30 1234567`, `030/1234567`, `+1.415.555.2671`. Anything else (letters, `ext.`, `;`, a
 * second number after a comma) makes the cell invalid rather than letting the parser guess which
 * part was meant.
 */
const PHONE_CHARACTERS = /^\+?[\d\s().\-/]+$/;
const OPENING = /^[\s(]*/;

/** A supported ISO 3166-1 alpha-2 code in upper case, or undefined for anything else. */
export function parseCountry(raw: string): string | undefined {
  const code = raw.trim().toUpperCase();
  return /^[A-Z]{2}$/.test(code) && isSupportedCountry(code) ? code : undefined;
}

/**
 * One phone number in E.164 (`+493012345678`), or a row error:
 *
 * - `empty_value`: a blank cell;
 * - `invalid_phone`: letters or other stray characters, or not a number of its country's plan
 *   (too short, too long, or an unallocated range);
 * - `missing_country_code`: written without `+` or `00` when the job names no default country.
 *
 * Without a default country a leading `00` is read as `+`: it is the international prefix ITU-T
 * recommends and most of the world dials. With one, that country's own prefix applies instead
 * (libphonenumber knows them: `00` in DE, `011` in US, `0011` in AU), and national forms such as
 * `(030) 123-4567` read as that country's numbers. A `+` always wins over the default country.
 */
export function normalisePhone(raw: string, options: NormaliseOptions = {}): NormaliseResult {
  const text = raw.trim();
  if (text === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'the phone cell is empty' };
  if (!PHONE_CHARACTERS.test(text.replace(OPENING, ''))) {
    return { ok: false, code: ERROR_CODES.invalidPhone, message: 'a phone number holds only digits, blanks, + ( ) - . and /' };
  }
  const country = options.defaultCountry;
  let international = text.replace(OPENING, '').startsWith('+');
  let input = text;
  if (!international && country === undefined && text.startsWith('00')) {
    input = `+${text.slice(2)}`;
    international = true;
  }
  if (!international && country === undefined) {
    return { ok: false, code: ERROR_CODES.missingCountryCode, message: 'the number has no country code: write it as +49 ... or give the job a default country' };
  }
  // The parser would pick a number out of surrounding text; PHONE_CHARACTERS has ruled text out.
  const parsed = parsePhoneNumberFromString(input, country === undefined ? {} : { defaultCountry: country as CountryCode });
  if (parsed === undefined || !parsed.isValid()) return { ok: false, code: ERROR_CODES.invalidPhone, message: 'not a valid phone number' };
  return { ok: true, key: parsed.number };
}

/** Job type `phone_breaches`: one phone number per row, answered from the breach index. */
export const phoneBreachesPipeline: Pipeline<PhoneBreachResult> = {
  type: 'phone_breaches',
  lookupKind: 'phone_breaches',
  keyHeader: 'phone',
  headerless: true,
  normalise: normalisePhone,
  // `phone_e164`, not the spec's `phone`: the input's own key column is `phone` by default, and two
  // columns of one name would make the header ambiguous for every reader of the file.
  resultColumns: ['phone_e164', 'breached', 'total_breaches', 'first_breached', 'last_breached', 'summary'],
  resultCells(result: PhoneBreachResult): string[] {
    return [
      result.phone,
      String(result.breached),
      String(result.total_breaches),
      result.first_breached ?? '',
      result.last_breached ?? '',
      result.summary,
    ];
  },
  isFound(result: PhoneBreachResult): boolean {
    return result.breached;
  },
};
