import { describe, expect, it } from 'vitest';
import { coreName, domainAndParents, domainOf, similarity, trigrams } from '../src/lookups/company/company-names.js';
import type { CompanyResult } from '../src/lookups/company/company-profile.js';
import { companyPipeline, normaliseCompany } from './company.js';
import { pipelineFor } from './index.js';

describe('companyPipeline.normalise', () => {
  const valid: [raw: string, key: string][] = [
    ['Acme', 'name:acme'],
    ['  ACME   Inc \t', 'name:acme inc'],
    ['Acme\u00a0Widgets\nGmbH', 'name:acme widgets gmbh'],
    ['Acme, Inc.', 'name:acme, inc.'],
    ['Procter & Gamble', 'name:procter & gamble'],
    ['Inc.', 'name:inc.'],
    ['acme_corp.com', 'name:acme_corp.com'],
    ['münchen.de', 'name:münchen.de'],
    ['www.com', 'domain:www.com'],
    ['Cafe\u0301 Noir', 'name:café noir'],
    ['acme.com', 'domain:acme.com'],
    ['ACME.COM', 'domain:acme.com'],
    ['www.acme.com', 'domain:acme.com'],
    ['https://www.Acme.com/about?x=1#top', 'domain:acme.com'],
    ['http://acme.com:8080', 'domain:acme.com'],
    ['acme.com.', 'domain:acme.com'],
    ['info@acme.com', 'domain:acme.com'],
    ['eu.shop.acme.co.uk', 'domain:eu.shop.acme.co.uk'],
    ['xn--mnchen-3ya.de', 'domain:xn--mnchen-3ya.de'],
    ['E.ON', 'domain:e.on'],
    ['x'.repeat(200), `name:${'x'.repeat(200)}`],
    ['"Acme Inc"', 'name:acme inc'],
    ['“Acme”', 'name:acme'],
    ["' Acme '", 'name:acme'],
    ['\u200bAcme\u00a0', 'name:acme'],
    ['"acme.com"', 'domain:acme.com'],
    ['Toys "R" Us', 'name:toys "r" us'],
    ['"Acme" Inc', 'name:"acme" inc'],
  ];
  it.each(valid)('%j is the key %j', (raw, key) => {
    expect(normaliseCompany(raw)).toEqual({ ok: true, key });
    expect(companyPipeline.normalise(raw)).toEqual({ ok: true, key });
  });

  const invalid: [raw: string, code: string][] = [
    ['', 'empty_value'],
    ['   \t ', 'empty_value'],
    ['""', 'empty_value'],
    ['\u200b', 'empty_value'],
    ['x'.repeat(201), 'company_too_long'],
    [`${'ü'.repeat(150)} ${'ß'.repeat(50)}`, 'company_too_long'],
  ];
  it.each(invalid)('%j is invalid with %s', (raw, code) => {
    expect(normaliseCompany(raw)).toMatchObject({ ok: false, code });
  });

  it('counts characters, not UTF-16 units: 200 emoji are a valid name', () => {
    expect(normaliseCompany('😀'.repeat(200)).ok).toBe(true);
  });
});

describe('company names', () => {
  it.each([
    ['Acme', 'acme'],
    ['ACME, Inc.', 'acme'],
    ['Acme Co., Ltd.', 'acme'],
    ['The Procter & Gamble Company', 'procter gamble'],
    ['J.P. Morgan', 'jp morgan'],
    ["Ben & Jerry's", 'ben jerrys'],
    ['Société Générale S.A.', 'societe generale'],
    ['Co', 'co'],
    ['The', 'the'],
    ['Acme Holdings', 'acme holdings'],
    ['"Acme" OR NEAR*', 'acme or near'],
  ])('coreName(%j) is %j', (name, core) => {
    expect(coreName(name)).toBe(core);
  });

  it('reads domains out of URLs and addresses, and names out of everything else', () => {
    expect(domainOf('HTTPS://user@www.Acme.com:443/x')).toBe('acme.com');
    expect(domainOf('acme inc.com')).toBeUndefined();
    expect(domainOf('-acme.com')).toBeUndefined();
    expect(domainOf('acme.c0m')).toBeUndefined();
  });

  it('lists a domain and its parents down to two labels', () => {
    expect(domainAndParents('eu.shop.acme.com')).toEqual(['eu.shop.acme.com', 'shop.acme.com', 'acme.com']);
    expect(domainAndParents('acme.com')).toEqual(['acme.com']);
  });

  it('scores spelling variants by shared trigrams', () => {
    expect(similarity(trigrams('globex'), trigrams('globex'))).toBe(1);
    expect(similarity(trigrams('globx'), trigrams('globex'))).toBeGreaterThanOrEqual(0.5);
    expect(similarity(trigrams('ibn'), trigrams('ibm'))).toBe(0);
  });
});

describe('companyPipeline output', () => {
  const acme = { name: 'Acme', domain: 'acme.com', description: 'Anvils', industry: 'Manufacturing', employee_count: 120, country: 'US', website: 'https://acme.com', extra: {}, score: 1 };

  it('is registered as the job type company, keyed by the company column', () => {
    expect(pipelineFor('company')).toBe(companyPipeline);
    expect(companyPipeline.keyHeader).toBe('company');
    expect(companyPipeline.keyAliases).toEqual([expect.arrayContaining(['company name', 'organization']), expect.arrayContaining(['domain']), expect.arrayContaining(['website'])]);
    expect(companyPipeline.resultColumns).not.toContain('company');
  });

  it('writes the best candidate, and empty cells when nothing was found', () => {
    const found: CompanyResult = { match: 'near', results: [acme, { ...acme, name: 'Acme Labs', domain: null }] };
    expect(companyPipeline.resultCells(found)).toEqual(['Acme', 'acme.com', 'Manufacturing', '120', 'US', 'https://acme.com', 'Anvils', 'near', '1']);
    expect(companyPipeline.isFound(found)).toBe(true);
    const none: CompanyResult = { match: null, results: [] };
    expect(companyPipeline.resultCells(none)).toEqual(['', '', '', '', '', '', '', '', '']);
    expect(companyPipeline.isFound(none)).toBe(false);
    // An answer cached before scores existed was picked without the threshold: not trusted.
    const { score: _, ...unscored } = acme;
    expect(companyPipeline.isFound({ match: 'near', results: [unscored] })).toBe(false);
  });
});
