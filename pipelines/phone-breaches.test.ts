import { describe, expect, it } from 'vitest';
import { breachResult } from '../src/lookups/phone/embedded-breach-index.js';
import { pipelineFor } from './index.js';
import { normalisePhone, parseCountry, phoneBreachesPipeline } from './phone-breaches.js';

describe('phoneBreachesPipeline.normalise', () => {
  const valid: [raw: string, defaultCountry: string | undefined, key: string][] = [
    ['+49 30 1234567', undefined, '+49301234567'],
    ['+49301234567', undefined, '+49301234567'],
    ['  +49-30-123 45 67\t', undefined, '+49301234567'],
    ['+49 (0)30 1234567', undefined, '+49301234567'],
    ['+49.30.1234567', undefined, '+49301234567'],
    ['(+49) 30 1234567', undefined, '+49301234567'],
    ['+49\u00a030\u00a01234567', undefined, '+49301234567'],
    ['0049 30 1234567', undefined, '+49301234567'],
    ['0049301234567', undefined, '+49301234567'],
    ['+1 (415) 555-2671', undefined, '+14155552671'],
    ['+1.415.555.2671', undefined, '+14155552671'],
    ['00 44 20 7946 0958', undefined, '+442079460958'],
    ['+44 7911 123456', undefined, '+447911123456'],
    // national forms, with the job's default country
    ['(030) 123-4567', 'DE', '+49301234567'],
    ['030/1234567', 'DE', '+49301234567'],
    ['030 1234567', 'DE', '+49301234567'],
    ['0049 30 1234567', 'DE', '+49301234567'],
    ['(415) 555-2671', 'US', '+14155552671'],
    ['1 415 555 2671', 'US', '+14155552671'],
    ['011 49 30 1234567', 'US', '+49301234567'],
    ['020 7946 0958', 'GB', '+442079460958'],
    ['0011 49 30 1234567', 'AU', '+49301234567'],
    // a + names its own country, whatever the job's default
    ['+1 415 555 2671', 'DE', '+14155552671'],
  ];
  it.each(valid)('%j (default country %s) is %s', (raw, defaultCountry, key) => {
    expect(normalisePhone(raw, { defaultCountry })).toMatchObject({ ok: true, key });
    expect(phoneBreachesPipeline.normalise(raw, { defaultCountry })).toMatchObject({ ok: true, key });
  });

  const invalid: [raw: string, defaultCountry: string | undefined, code: string][] = [
    ['', undefined, 'empty_value'],
    ['  \t ', 'DE', 'empty_value'],
    // no country code, and no default country to lend one
    ['(030) 123-4567', undefined, 'missing_country_code'],
    ['030 1234567', undefined, 'missing_country_code'],
    ['415-555-2671', undefined, 'missing_country_code'],
    ['49 30 1234567', undefined, 'missing_country_code'],
    // letters and stray characters
    ['+49 30 CALLME1', undefined, 'invalid_phone'],
    ['+1 800 FLOWERS', undefined, 'invalid_phone'],
    ['abc', 'DE', 'invalid_phone'],
    ['+1 415 555 2671 ext', undefined, 'invalid_phone'],
    ['+1 415 555 2671 ext 12345678', undefined, 'invalid_phone'],
    ['+1 415 555 2671 ext 12 x3', undefined, 'invalid_phone'],
    ['+1 415 555 2671 x', undefined, 'invalid_phone'],
    ['tel:+49301234567', undefined, 'invalid_phone'],
    ['+49 30 1234567;', undefined, 'invalid_phone'],
    ['+49 30 1234567, +49 30 7654321', undefined, 'invalid_phone'],
    ['+49 30 1234567+', undefined, 'invalid_phone'],
    ['++49 30 1234567', undefined, 'invalid_phone'],
    ['=1+1', 'DE', 'invalid_phone'],
    ['()-', 'DE', 'invalid_phone'],
    // lengths and ranges no number plan has
    ['+49 30 12', undefined, 'invalid_phone'],
    ['+49 30 123456789012345', undefined, 'invalid_phone'],
    ['+1 415 555 267', undefined, 'invalid_phone'],
    ['+1 415 555 26711', undefined, 'invalid_phone'],
    ['+1 000 000 0000', undefined, 'invalid_phone'],
    ['+55 11 9104 7514', undefined, 'invalid_phone'],
    ['+0 123 4567', undefined, 'invalid_phone'],
    ['+888 1234 5678', undefined, 'invalid_phone'],
    ['1234', 'DE', 'invalid_phone'],
    ['12345678901234567890', 'US', 'invalid_phone'],
    // US dials 011 abroad, not 00: with that default, 0049 is no international number
    ['0049 30 1234567', 'US', 'invalid_phone'],
  ];
  it.each(invalid)('%j (default country %s) is %s', (raw, defaultCountry, code) => {
    const result = normalisePhone(raw, { defaultCountry });
    expect(result).toMatchObject({ ok: false, code });
    expect(result.ok ? '' : result.message).not.toBe('');
  });

  it('reads one number written in many ways as one key, so the job counts the repeats as duplicates', () => {
    const forms = ['+49 30 1234567', '0049 (30) 123-45-67', '(030) 1234567', '+49-30-1234567', '030/1234567'];
    const keys = forms.map((raw) => normalisePhone(raw, { defaultCountry: 'DE' }));
    expect(new Set(keys.map((k) => (k.ok ? k.key : k.code)))).toEqual(new Set(['+49301234567']));
  });
});

describe('phone cells with an extension', () => {
  const forms: [raw: string, key: string][] = [
    ['+1 415 816 6557 ext. 12', '+14158166557'],
    ['+1 415 816 6557 ext 12', '+14158166557'],
    ['+1 415 816 6557 ext.12', '+14158166557'],
    ['+1 415 816 6557 EXT. 12', '+14158166557'],
    ['+1 415 816 6557 extension 12', '+14158166557'],
    ['+1 415 816 6557 x12', '+14158166557'],
    ['+1 415 816 6557x12', '+14158166557'],
    ['+1 415 816 6557 X 12', '+14158166557'],
    ['+1 415 816 6557 #12', '+14158166557'],
    ['+1-415-816-6557;ext=12', '+14158166557'],
    ['+49 30 1234567 ext. 1234567', '+49301234567'],
  ];
  it.each(forms)('%j is %s: the key leaves the extension out', (raw, key) => {
    expect(normalisePhone(raw)).toMatchObject({ ok: true, key });
  });

  it('reads the extension off a national number too, with its row country', () => {
    expect(normalisePhone('(415) 816-6557 x12', { rowCountry: 'US' })).toMatchObject({ ok: true, key: '+14158166557' });
  });
});

describe('a row country', () => {
  // The row's country cell in each accepted form, all reading one national number as the US's.
  const cells: [cell: string][] = [
    ['US'], ['us'], [' Us '], ['USA'], ['U.S.A.'], ['United States'], ['united states of america'], ['Vereinigte Staaten'],
    ['États-Unis'], ['Etats-Unis'], ['Estados Unidos'], ['Stati Uniti'], ['Verenigde Staten'], ['+1'], ['1'], ['001'], ['+ 1'],
  ];
  it.each(cells)('%j reads (415) 816-6557 as +14158166557, whatever the default country', (cell) => {
    expect(normalisePhone('(415) 816-6557', { rowCountry: cell, defaultCountry: 'DE' })).toEqual({
      ok: true,
      key: '+14158166557',
      origin: { country: 'US', overrodeRow: false },
    });
  });

  const national: [cell: string, raw: string, key: string, country: string][] = [
    ['DE', '030 1234567', '+49301234567', 'DE'],
    ['Germany', '030 1234567', '+49301234567', 'DE'],
    ['Deutschland', '030 1234567', '+49301234567', 'DE'],
    ['Allemagne', '030 1234567', '+49301234567', 'DE'],
    ['49', '030 1234567', '+49301234567', 'DE'],
    ['+49', '030 1234567', '+49301234567', 'DE'],
    ['0049', '030 1234567', '+49301234567', 'DE'],
    ['UK', '020 7946 0958', '+442079460958', 'GB'],
    ['Great Britain', '020 7946 0958', '+442079460958', 'GB'],
    ['United Kingdom', '020 7946 0958', '+442079460958', 'GB'],
    ['+44', '020 7946 0958', '+442079460958', 'GB'],
    ['France', '06 12 34 56 78', '+33612345678', 'FR'],
    ['España', '612 34 56 78', '+34612345678', 'ES'],
    ['Italia', '06 123 4567', '+39061234567', 'IT'],
    ['Nederland', '06 12345678', '+31612345678', 'NL'],
    ['Brasil', '(11) 91234-5678', '+5511912345678', 'BR'],
    ['Japan', '090-1234-5678', '+819012345678', 'JP'],
    ['India', '98765 43210', '+919876543210', 'IN'],
    ['Côte d’Ivoire', '01 23 45 67 89', '+2250123456789', 'CI'],
    ['Canada', '(604) 555-0134', '+16045550134', 'CA'],
    // +1 is shared; its main country reads the number, which then counts where it belongs
    ['+1', '(604) 555-0134', '+16045550134', 'CA'],
    // a row country is trusted as given, even for a number without its trunk prefix
    ['DE', '4158166557', '+494158166557', 'DE'],
  ];
  it.each(national)('row %j reads %j as %s, counted as %s', (cell, raw, key, country) => {
    expect(normalisePhone(raw, { rowCountry: cell })).toEqual({ ok: true, key, origin: { country, overrodeRow: false } });
  });

  it("an empty row country falls back to the job's default country, then to missing_country_code", () => {
    expect(normalisePhone('030 1234567', { rowCountry: ' ', defaultCountry: 'DE' })).toMatchObject({ ok: true, key: '+49301234567' });
    expect(normalisePhone('030 1234567', { rowCountry: '' })).toMatchObject({ ok: false, code: 'missing_country_code' });
  });

  const unknown: [cell: string][] = [['XX'], ['Narnia'], ['DEU'], ['+999'], ['toString'], ['4 9'], ['D']];
  it.each(unknown)("an unreadable row country %j makes a national number unknown_country, not the default country's", (cell) => {
    expect(normalisePhone('030 1234567', { rowCountry: cell, defaultCountry: 'DE' })).toMatchObject({ ok: false, code: 'unknown_country' });
  });

  it("a number's own +CC wins over an unreadable or a different row country, and says so", () => {
    expect(normalisePhone('+49 30 1234567', { rowCountry: 'Narnia' })).toEqual({ ok: true, key: '+49301234567', origin: { country: 'DE', overrodeRow: false } });
    expect(normalisePhone('+49 30 1234567', { rowCountry: 'US' })).toEqual({ ok: true, key: '+49301234567', origin: { country: 'DE', overrodeRow: true } });
    expect(normalisePhone('011 49 30 1234567', { rowCountry: 'US' })).toEqual({ ok: true, key: '+49301234567', origin: { country: 'DE', overrodeRow: true } });
    // the same calling code is no disagreement: +1 604 is Canada's, read in a US row
    expect(normalisePhone('+1 604 555 0134', { rowCountry: 'US' })).toEqual({ ok: true, key: '+16045550134', origin: { country: 'CA', overrodeRow: false } });
  });

  it('counts a number of no country as 001', () => {
    expect(normalisePhone('+800 1234 5678')).toEqual({ ok: true, key: '+80012345678', origin: { country: '001', overrodeRow: false } });
  });
});

describe('implausible numbers', () => {
  it("the issue's case: with default country DE, (415) 816-6557 is no German number but implausible_number", () => {
    // libphonenumber calls +49 4158 166557 a valid German fixed line; a German writes it 04158 166557.
    expect(normalisePhone('(415) 816-6557', { defaultCountry: 'DE' })).toMatchObject({ ok: false, code: 'implausible_number' });
    expect(normalisePhone('415-816-6557', { defaultCountry: 'DE' })).toMatchObject({ ok: false, code: 'implausible_number' });
    expect(normalisePhone('04158 166557', { defaultCountry: 'DE' })).toMatchObject({ ok: true, key: '+494158166557' });
  });

  const implausible: [raw: string, defaultCountry: string][] = [
    ['20 7946 0958', 'GB'],
    ['6 12 34 56 78', 'FR'],
    ['30 1234567', 'DE'],
    ['912 345 67 89', 'RU'],
  ];
  it.each(implausible)('%j with default %s lacks the trunk prefix: implausible_number', (raw, defaultCountry) => {
    expect(normalisePhone(raw, { defaultCountry })).toMatchObject({ ok: false, code: 'implausible_number' });
  });

  // Countries that write no trunk prefix, or whose prefix is optional in the national form, are unaffected.
  const plausible: [raw: string, defaultCountry: string, key: string][] = [
    ['(415) 816-6557', 'US', '+14158166557'],
    ['06 123 4567', 'IT', '+39061234567'],
    ['612 34 56 78', 'ES', '+34612345678'],
  ];
  it.each(plausible)('%j with default %s is %s', (raw, defaultCountry, key) => {
    expect(normalisePhone(raw, { defaultCountry })).toMatchObject({ ok: true, key });
  });

  it('a number of a known length in an unallocated range is invalid_phone (type UNKNOWN with the max metadata)', () => {
    expect(normalisePhone('+55 11 9104 7514')).toMatchObject({ ok: false, code: 'invalid_phone' });
    expect(normalisePhone('(11) 9104-7514', { rowCountry: 'BR' })).toMatchObject({ ok: false, code: 'invalid_phone' });
  });
});

describe('parseCountry', () => {
  it.each([
    ['DE', 'DE'],
    ['de', 'DE'],
    [' us ', 'US'],
    ['GB', 'GB'],
  ])('%j is %s', (raw, code) => expect(parseCountry(raw)).toBe(code));

  it.each([[''], ['XX'], ['UK'], ['DEU'], ['D'], ['49'], ['+49'], ['toString']])('%j is no country', (raw) => {
    expect(parseCountry(raw)).toBeUndefined();
  });
});

describe('phoneBreachesPipeline output', () => {
  it('declares its columns and lookup, and is registered', () => {
    expect(phoneBreachesPipeline).toMatchObject({ type: 'phone_breaches', lookupKind: 'phone_breaches', keyHeader: 'phone' });
    expect(phoneBreachesPipeline.resultColumns).toEqual(['phone_e164', 'breached', 'total_breaches', 'first_breached', 'last_breached', 'summary']);
    expect(pipelineFor('phone_breaches')).toBe(phoneBreachesPipeline);
  });

  const cells: [records: Parameters<typeof breachResult>[1], cells: string[], found: boolean][] = [
    [[], ['+49301234567', 'false', '0', '', '', 'Not found in any known breach'], false],
    [[{ breach: 'Acme', breachedAt: '2019-05-01' }], ['+49301234567', 'true', '1', '2019-05-01', '2019-05-01', 'Found in 1 breach (2019-05-01): Acme'], true],
    [[{ breach: 'Acme', breachedAt: null }], ['+49301234567', 'true', '1', '', '', 'Found in 1 breach: Acme'], true],
    [
      [
        { breach: 'Acme', breachedAt: '2019-05-01' },
        { breach: 'Globex', breachedAt: '2021-02-03' },
        { breach: 'Undated', breachedAt: null },
      ],
      ['+49301234567', 'true', '3', '2019-05-01', '2021-02-03', 'Found in 3 breaches (2019-05-01 to 2021-02-03): Acme, Globex, Undated'],
      true,
    ],
    [
      ['A', 'B', 'C', 'D', 'E', 'F', 'G'].map((breach, i) => ({ breach, breachedAt: `2020-01-0${i + 1}` })),
      ['+49301234567', 'true', '7', '2020-01-01', '2020-01-07', 'Found in 7 breaches (2020-01-01 to 2020-01-07): A, B, C, D, E and 2 more'],
      true,
    ],
  ];
  it.each(cells)('%j -> %j, found %s', (records, expected, found) => {
    const result = breachResult('+49301234567', records);
    expect(phoneBreachesPipeline.resultCells(result)).toEqual(expected);
    expect(phoneBreachesPipeline.isFound(result)).toBe(found);
  });
});
