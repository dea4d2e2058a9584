import { describe, expect, it } from 'vitest';
import { isAppError } from '../shared/errors.js';
import { CountryTally, findCountryColumn } from './row-country.js';

describe('findCountryColumn', () => {
  const taken: [header: string][] = [
    ['Country'], ['COUNTRY'], ['country code'], ['Country Code'], ['country_code'], ['Country-Code'], ['countrycode'], [' Land '], ['Pays'], ['País'], ['PAIS'],
  ];
  it.each(taken)('takes a header %j by default', (cell) => {
    expect(findCountryColumn(['id', 'phone', cell], undefined)).toBe(2);
  });

  it.each([['Country of birth'], ['countries'], ['region'], ['state']])('does not take %j', (cell) => {
    expect(findCountryColumn(['phone', cell], undefined)).toBeUndefined();
  });

  it('takes the leftmost of two, and none without a header row', () => {
    expect(findCountryColumn(['phone', 'Country', 'Country Code'], undefined)).toBe(1);
    expect(findCountryColumn(undefined, undefined)).toBeUndefined();
  });

  it('prefers the column the job names, compared without case and then as headers are', () => {
    expect(findCountryColumn(['phone', 'country', 'Nation'], 'nation')).toBe(2);
    expect(findCountryColumn(['phone', 'Land of Call'], 'land_of_call')).toBe(1);
  });

  it('refuses a named column the header lacks, or a file with no header row, as column_not_found', () => {
    expect(() => findCountryColumn(['phone', 'country'], 'Nation')).toThrow(expect.toSatisfy((e) => isAppError(e, 'column_not_found')));
    expect(() => findCountryColumn(undefined, 'country')).toThrow(expect.toSatisfy((e) => isAppError(e, 'column_not_found')));
  });
});

describe('CountryTally', () => {
  it('counts numbers per country, largest first, and the overrides; null when it saw none', () => {
    const tally = new CountryTally();
    expect(tally.result()).toBeNull();
    for (const country of ['DE', 'US', 'US', '001']) tally.add({ country, overrodeRow: country === 'DE' });
    expect(tally.result()).toEqual({ byCountry: { US: 2, '001': 1, DE: 1 }, overrides: 1 });
    expect(Object.keys(tally.result()!.byCountry)).toEqual(['US', '001', 'DE']);
  });
});
