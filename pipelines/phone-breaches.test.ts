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
    expect(normalisePhone(raw, { defaultCountry })).toEqual({ ok: true, key });
    expect(phoneBreachesPipeline.normalise(raw, { defaultCountry })).toEqual({ ok: true, key });
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
    ['+1 415 555 2671 ext 12', undefined, 'invalid_phone'],
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
