// The max metadata rather than the default min: min checks a number's length only, max also checks
// its digits against each country's number plan (e.g. Brazil's +55 11 9104 7514, a length that
// exists but a range that does not). An invalid row is free and never looked up, so the precise
// check is what keeps customers from paying for junk. Both parse at about the same speed here
// (parsing, not validation, dominates); max is 145 kB instead of 80 kB, which a server never
// notices. The price of precision: a range allocated after the package's metadata was built reads
// as invalid until the dependency is updated. Imports use the same rule, so the index and lookups
// always agree on what a valid number is.
import { getCountryCallingCode, isSupportedCountry, parsePhoneNumberFromString, type CountryCode, type PhoneNumber } from 'libphonenumber-js/max';
import { countryFromCell } from '../src/lookups/phone/countries.js';
import type { PhoneBreachResult } from '../src/lookups/phone/embedded-breach-index.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import { PHONE_ALIASES } from './key-aliases.js';
import type { NormaliseOptions, NormaliseResult, Pipeline } from './pipeline.js';

/**
 * Digits, blanks and the punctuation people write numbers with: `+49 (0)30 123-4567`,
 * `(+49) 30 1234567`, `030/1234567`, `+1.415.555.2671`. Anything else (letters, `ext.`, `;`, a
 * second number after a comma) makes the cell invalid rather than letting the parser guess which
 * part was meant.
 */
const PHONE_CHARACTERS = /^\+?[\d\s().\-/]+$/;
const OPENING = /^[\s(]*/;

/**
 * A trailing extension, as CRMs and signatures write it: `ext. 12`, `ext 12`, `extension 12`,
 * `x12`, `#12`, `;ext=12` (RFC 3966). It reaches a desk phone behind the number, so the key is the
 * number alone; the cell itself is written back unchanged.
 */
const EXTENSION = /(?:\s*;\s*ext=|\s*(?:ext\.?|extension|x|#)\s*)\d{1,7}$/i;

/** A number of no country (+800, +882, ...) in the per-country counts: CLDR's code for "world". */
export const NO_COUNTRY = '001';

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
 *   (too short, too long, or an unallocated range: with the max metadata, a number whose type is
 *   `UNKNOWN` is not valid);
 * - `missing_country_code`: written without `+` or `00`, and neither the row nor the job names a
 *   country;
 * - `unknown_country`: written without `+`, and the row's country cell names no country we know
 *   (the job's default country is not used then: the row said something else, and a guess would
 *   charge a wrong number);
 * - `implausible_number`: a national number read with the job's default country only, but written
 *   without that country's trunk prefix (`(415) 816-6557` with default DE: Germans write `04158
 *   166557`), so most likely a number of another country. A row country is trusted as given.
 *
 * The country for national forms is the row's (`rowCountry`), else the job's default. Without
 * either, a leading `00` is read as `+`: it is the international prefix ITU-T recommends and most
 * of the world dials. With one, that country's own prefix applies instead (libphonenumber knows
 * them: `00` in DE, `011` in US, `0011` in AU). A `+` always wins over both countries; when it
 * disagrees with the row's country the result says so (`origin.overrodeRow`), for the job's counts.
 * A trailing extension (EXTENSION) is left out of the key.
 */
export function normalisePhone(raw: string, options: NormaliseOptions = {}): NormaliseResult {
  const trimmed = raw.trim();
  if (trimmed === '') return { ok: false, code: ERROR_CODES.emptyValue, message: 'the phone cell is empty' };
  const text = trimmed.replace(EXTENSION, '');
  if (!PHONE_CHARACTERS.test(text.replace(OPENING, ''))) {
    return { ok: false, code: ERROR_CODES.invalidPhone, message: 'a phone number holds only digits, blanks, + ( ) - . and /, and may end in an extension such as ext. 12' };
  }
  let international = text.replace(OPENING, '').startsWith('+');
  const rowCell = options.rowCountry?.trim() ?? '';
  const rowCountry = rowCell === '' ? undefined : countryFromCell(rowCell);
  if (!international && rowCell !== '' && rowCountry === undefined) {
    return { ok: false, code: ERROR_CODES.unknownCountry, message: `the row's country "${rowCell.slice(0, 40)}" is no country code, name or calling code we know` };
  }
  const country = rowCountry ?? options.defaultCountry;
  let input = text;
  if (!international && country === undefined && text.startsWith('00')) {
    input = `+${text.slice(2)}`;
    international = true;
  }
  if (!international && country === undefined) {
    return { ok: false, code: ERROR_CODES.missingCountryCode, message: 'the number has no country code: write it as +49 ..., give the row a country, or give the job a default country' };
  }
  // The parser would pick a number out of surrounding text; PHONE_CHARACTERS has ruled text out.
  const parsed = parsePhoneNumberFromString(input, country === undefined ? {} : { defaultCountry: country as CountryCode });
  if (parsed === undefined || !parsed.isValid()) return { ok: false, code: ERROR_CODES.invalidPhone, message: 'not a valid phone number' };
  if (!international && rowCountry === undefined && lacksTrunkPrefix(input, parsed)) {
    return {
      ok: false,
      code: ERROR_CODES.implausibleNumber,
      message: `written without ${country}'s trunk prefix, the number is most likely of another country: give the row a country or write it with +`,
    };
  }
  const overrodeRow = rowCountry !== undefined && parsed.countryCallingCode !== getCountryCallingCode(rowCountry as CountryCode);
  return { ok: true, key: parsed.number, origin: { country: parsed.country ?? NO_COUNTRY, overrodeRow } };
}

/**
 * Whether a national-format number was written as its bare national number although its country
 * writes a trunk prefix in front (DE, GB, FR: `0`; RU: `8`). Countries with none (US, IT, ES)
 * never match. An international prefix in the input (`0049 ...`) adds digits, so it never matches.
 */
function lacksTrunkPrefix(input: string, parsed: PhoneNumber): boolean {
  const national = parsed.nationalNumber as string;
  return input.replace(/\D/g, '') === national && parsed.formatNational().replace(/\D/g, '') !== national;
}

/** Job type `phone_breaches`: one phone number per row, answered from the breach index. */
export const phoneBreachesPipeline: Pipeline<PhoneBreachResult> = {
  type: 'phone_breaches',
  lookupKind: 'phone_breaches',
  keyHeader: 'phone',
  keyAliases: PHONE_ALIASES,
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
