import { getCountries, isSupportedCountry, Metadata } from 'libphonenumber-js/max';

/**
 * The languages whose country names a country cell may hold. libphonenumber has no names; Node's
 * ICU does (`Intl.DisplayNames`), so the list follows CLDR rather than a hand-kept table that would
 * drift. These seven cover the Western European and American exports customers upload.
 */
const NAME_LANGUAGES = ['en', 'de', 'fr', 'es', 'it', 'pt', 'nl'] as const;

/**
 * Names CLDR does not give in those languages but spreadsheets use: short forms, former names and
 * the UK's nations (whose numbers are all GB's).
 */
const ALIASES: Record<string, string> = {
  usa: 'US',
  america: 'US',
  unitedstatesofamerica: 'US',
  uk: 'GB',
  greatbritain: 'GB',
  britain: 'GB',
  england: 'GB',
  scotland: 'GB',
  wales: 'GB',
  northernireland: 'GB',
  deutschland: 'DE',
  brd: 'DE',
  holland: 'NL',
  thenetherlands: 'NL',
  czechrepublic: 'CZ',
  turkey: 'TR',
  southkorea: 'KR',
  korea: 'KR',
  northkorea: 'KP',
  ivorycoast: 'CI',
  russianfederation: 'RU',
  uae: 'AE',
  vatican: 'VA',
  burma: 'MM',
  swaziland: 'SZ',
  macedonia: 'MK',
  republicofireland: 'IE',
};

/** `+49`, `49`, `0049`, `+ 49`: a calling code, with or without its international prefix. */
const CALLING_CODE = /^(?:\+|00)?\s*(\d{1,3})$/;

let names: Map<string, string> | undefined;

/**
 * The country a row's country cell names, as an ISO 3166-1 alpha-2 code libphonenumber supports,
 * or undefined when the cell names none. Accepted: an alpha-2 code (`de`), a name in one of
 * NAME_LANGUAGES or ALIASES (`Germany`, `Allemagne`, `Deutschland`, `U.S.A.`), compared without
 * case, accents, blanks or punctuation; or a calling code (`+1`, `44`, `0049`). A code several
 * countries share reads as the one libphonenumber makes its main country (+1 US, +44 GB, +7 RU);
 * that only decides the counts and which national forms are read, since their numbers share a plan.
 */
export function countryFromCell(raw: string): string | undefined {
  const text = raw.trim();
  if (text === '') return undefined;
  const code = text.toUpperCase();
  // `UK` is no ISO code (GB is) but is what people write: an unknown pair may still be an alias.
  if (/^[A-Z]{2}$/.test(code) && isSupportedCountry(code)) return code;
  const calling = CALLING_CODE.exec(text);
  if (calling !== null) return mainCountryFor(calling[1]!);
  return countryNames().get(nameKey(text));
}

/** A name as compared: lower case, without accents, blanks, dots, dashes or apostrophes. */
function nameKey(text: string): string {
  return text
    .normalize('NFD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, '');
}

function mainCountryFor(callingCode: string): string | undefined {
  // Typed loosely by the package; it is the lookup libphonenumber itself uses for `+CC` numbers.
  const metadata = new Metadata() as unknown as { getCountryCodeForCallingCode(code: string): string | undefined };
  return metadata.getCountryCodeForCallingCode(callingCode);
}

/** Built once, on the first name seen: about 245 countries in 7 languages, a few thousand entries. */
function countryNames(): Map<string, string> {
  if (names !== undefined) return names;
  const built = new Map<string, string>();
  for (const [alias, code] of Object.entries(ALIASES)) built.set(alias, code);
  // English first: a name that means different countries in two languages keeps its English sense.
  for (const language of NAME_LANGUAGES) {
    const display = new Intl.DisplayNames([language], { type: 'region', fallback: 'none' });
    for (const code of getCountries()) {
      const name = display.of(code);
      if (name === undefined) continue;
      const key = nameKey(name);
      if (key !== '' && !built.has(key)) built.set(key, code);
    }
  }
  names = built;
  return built;
}
