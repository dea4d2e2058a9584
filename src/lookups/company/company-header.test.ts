import { describe, expect, it } from 'vitest';
import { isAppError, type ErrorCode } from '../../shared/errors.js';
import { companyHeader, parseCompanyMap, type CompanyColumn } from './company-header.js';
import { companyLine, websiteDomain } from './company-records.js';

describe('companyHeader by aliases', () => {
  const cases: [header: string[], found: Partial<Record<CompanyColumn, number>>][] = [
    [['name', 'domain'], { name: 0, domain: 1 }],
    [['Company Name', 'Website', 'Employees', 'Industry', 'Country'], { name: 0, website: 1, employee_count: 2, industry: 3, country: 4 }],
    [['Account Name', 'Company Domain', 'Headcount'], { name: 0, domain: 1, employee_count: 2 }],
    [['ORGANISATION', 'homepage', 'company-size'], { name: 0, website: 1, employee_count: 2 }],
    [['Firma', 'Web', 'Employee_Count'], { name: 0, website: 1, employee_count: 2 }],
    [['organization', 'URL', 'website domain', 'sector'], { name: 0, website: 1, domain: 2, industry: 3 }],
    [['Company', 'company'], { name: 0 }],
  ];
  it.each(cases)('%j finds %j', (header, found) => {
    expect(companyHeader(header).at).toEqual(found);
  });

  it('keeps other columns as extra, by lower-case name', () => {
    expect(companyHeader(['Company', 'Ticker', 'CEO']).extra).toEqual([
      { name: 'ticker', index: 1 },
      { name: 'ceo', index: 2 },
    ]);
  });

  const refused: [header: string[], code: ErrorCode][] = [
    [['Company', 'Company Name'], 'ambiguous_column'],
    [['name', 'organization'], 'ambiguous_column'],
    [['company', 'website', 'url'], 'ambiguous_column'],
    [['title', 'domain'], 'column_not_found'],
    [[], 'column_not_found'],
  ];
  it.each(refused)('%j is refused with %s', (header, code) => {
    expect(() => companyHeader(header)).toThrow(expect.toSatisfy((e) => isAppError(e, code)));
  });

  it('names the header it saw and how to map a column', () => {
    expect(() => companyHeader(['Title', 'Web'])).toThrow(/its header is "Title", "Web"[\s\S]*--map|--map[\s\S]*its header is "Title", "Web"/);
    expect(() => companyHeader(['Company', 'Account Name'])).toThrow('columns "Company" and "Account Name" could each be the name column; choose one with --map "Company=name"');
  });
});

describe('companyHeader with --map', () => {
  it('takes the mapped columns first, and the aliases for the rest', () => {
    const map = parseCompanyMap(['Kunde=name,Netz=website', 'Anzahl Mitarbeiter=employee_count']);
    expect(companyHeader(['Kunde', 'Netz', 'Anzahl Mitarbeiter', 'Land'], map).at).toEqual({ name: 0, website: 1, employee_count: 2, country: 3 });
  });

  it('settles two alias candidates, leaving the other as extra', () => {
    const header = companyHeader(['Company', 'Account Name'], parseCompanyMap(['Account Name=name']));
    expect(header.at).toEqual({ name: 1 });
    expect(header.extra).toEqual([{ name: 'company', index: 0 }]);
  });

  const badMaps: string[][] = [['Company'], ['Company=ceo'], ['=name'], ['A=name,B=name']];
  it.each(badMaps)('--map %j is refused as bad_argument', (...values) => {
    expect(() => parseCompanyMap(values)).toThrow(expect.toSatisfy((e) => isAppError(e, 'bad_argument')));
  });

  it('refuses a mapped header the file does not have, naming its header', () => {
    expect(() => companyHeader(['Firm'], parseCompanyMap(['Company=name']))).toThrow('--map "Company=name": the file has no column named "Company"; its header is "Firm"');
  });
});

describe('websiteDomain', () => {
  const cases: [website: string, domain: string | undefined][] = [
    ['https://www.Acme.com/about', 'acme.com'],
    ['http://acme.com', 'acme.com'],
    ['www.acme.co.uk', 'acme.co.uk'],
    ['acme.com/de?x=1#y', 'acme.com'],
    ['https://shop.acme.com:8443/', 'shop.acme.com'],
    ['https://user@acme.com', 'acme.com'],
    ['http://localhost:3000', undefined],
    ['http://intranet.localhost/', undefined],
    ['http://printer.local', undefined],
    ['https://wiki.internal', undefined],
    ['http://10.0.0.1/', undefined],
    ['https://192.168.1.10:8080/x', undefined],
    ['http://[::1]/', undefined],
    ['http://[2001:db8::1]/', undefined],
    ['n/a', undefined],
    ['acme', undefined],
    ['acme .com', undefined],
  ];
  it.each(cases)('%j gives %j', (website, domain) => {
    expect(websiteDomain(website)).toBe(domain);
  });
});

describe('companyLine', () => {
  const header = companyHeader(['name', 'domain', 'website', 'employee_count']);
  const noDomain = companyHeader(['name', 'website', 'employees']);

  const kept: [cells: string[], domain: string | null, website: string | null, count: number | null, warnings: string[]][] = [
    [['Acme', 'acme.com', '', '1,200'], 'acme.com', null, 1200, []],
    [['Acme', '', 'https://www.Acme.com/about', '1 200'], 'acme.com', 'https://www.Acme.com/about', 1200, []],
    [['Acme', 'not a domain', 'https://acme.com', '40'], 'acme.com', 'https://acme.com', 40, ['domain:invalid_domain']],
    [['Acme', 'acme.com', 'http://10.0.0.1', '1.200'], 'acme.com', null, null, ['website:invalid_website', 'employee_count:invalid_employee_count']],
    [['Acme', '', '', '50-100'], null, null, null, ['employee_count:invalid_employee_count']],
    [['Acme', '', 'localhost', '~5000'], null, null, null, ['website:invalid_website', 'employee_count:invalid_employee_count']],
  ];
  it.each(kept)('%j is kept with domain %j, website %j, employees %j, warnings %j', (cells, domain, website, count, warnings) => {
    const line = companyLine(cells, header);
    expect(line.ok).toBe(true);
    if (!line.ok) return;
    expect(line.record).toMatchObject({ name: 'Acme', domain, website, employeeCount: count });
    expect(line.warnings.map((w) => `${w.column}:${w.code}`)).toEqual(warnings);
  });

  it('derives the domain from the website when the file has no domain column', () => {
    const line = companyLine(['Acme', 'https://www.acme.com/', '12'], noDomain);
    expect(line).toMatchObject({ ok: true, record: { domain: 'acme.com', website: 'https://www.acme.com/', employeeCount: 12 }, warnings: [] });
  });

  const refused: [cells: string[], code: string][] = [
    [['', 'acme.com', '', ''], 'empty_value'],
    [['x'.repeat(201), '', '', ''], 'company_too_long'],
  ];
  it.each(refused)('a line without a usable name is refused: %#', (cells, code) => {
    expect(companyLine(cells, header)).toEqual({ ok: false, code });
  });
});
