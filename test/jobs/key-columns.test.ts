import { describe, expect, it } from 'vitest';
import { companyPipeline } from '../../pipelines/company.js';
import { genderPipeline } from '../../pipelines/gender.js';
import { jobLookups, PIPELINES } from '../../pipelines/index.js';
import { phoneBreachesPipeline } from '../../pipelines/phone-breaches.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import { findKeyColumn, findKeyColumns, normaliseHeader } from '../../src/jobs/key-columns.js';
import { AppError, isAppError } from '../../src/shared/errors.js';

function thrown(run: () => unknown): AppError {
  try {
    run();
  } catch (e: unknown) {
    if (e instanceof AppError) return e;
    throw e;
  }
  throw new Error('expected an AppError');
}

const several = (...types: string[]) => jobLookups(types[0]!, { lookups: types.map((type) => ({ type })) });
const keyOf = (header: string, pipeline: Pipeline = genderPipeline, column?: string) => findKeyColumn(header.split('|'), pipeline, column).index;

describe('normaliseHeader', () => {
  it.each([
    ['E-mail Address', 'emailaddress'],
    ['EMAIL_ADDRESS', 'emailaddress'],
    ['  Email\u00a0Address ', 'emailaddress'],
    ['e.mail', 'email'],
    ['E\u2013Mail', 'email'],
    ['\u200bemail\ufeff', 'email'],
    ['Téléphone', 'telephone'],
    ['Teléfono', 'telefono'],
    ['Phone #', 'phone#'],
  ])('%j compares as %j', (name, normalised) => {
    expect(normaliseHeader(name)).toBe(normalised);
  });
});

describe('the key column found by its name', () => {
  it.each([
    ['id|email', 1],
    ['id|E-mail', 1],
    ['id|E-mail Address', 1],
    ['id|Email Address', 1],
    ['id|email_address', 1],
    ['id|EmailAddress', 1],
    ['id|Mail', 1],
    ['Name|E-Mail-Adresse', 1],
    ['nom|Courriel', 1],
    ['nombre|Correo electrónico', 1],
    ['nome|Posta elettronica', 1],
    ['First Name|Last Name|E-mail 1 - Value', 2],
    ['id|Work Email', 1],
  ])('gender: %j -> column %i', (header, index) => {
    expect(keyOf(header)).toBe(index);
  });

  it.each([
    ['id|Phone Number', 1],
    ['id|Mobile', 1],
    ['id|Tel.', 1],
    ['id|Telefonnummer', 1],
    ['id|Handy', 1],
    ['id|Téléphone', 1],
    ['id|Teléfono', 1],
    ['id|WhatsApp', 1],
    ['id|Cell Phone', 1],
  ])('phone_breaches: %j -> column %i', (header, index) => {
    expect(keyOf(header, phoneBreachesPipeline)).toBe(index);
  });

  it.each([
    ['id|Company Name', 1],
    ['id|Organisation', 1],
    ['id|Account Name', 1],
    ['id|Firma', 1],
    ['id|Unternehmen', 1],
    ['id|Entreprise', 1],
    ['id|Empresa', 1],
    ['id|Domain', 1],
    ['id|Website', 1],
  ])('company: %j -> column %i', (header, index) => {
    expect(keyOf(header, companyPipeline)).toBe(index);
  });
});

describe('ranking: a better name wins, two of one rank are ambiguous', () => {
  it.each([
    ['the type name beats a full name', 'Email Address|email', genderPipeline, 1],
    ['a full name beats a primary one', 'Primary Email|E-mail Address', genderPipeline, 1],
    ['a primary one beats a kind', 'Work Email|Primary Email', genderPipeline, 1],
    ['phone beats mobile', 'Mobile|Phone', phoneBreachesPipeline, 1],
    ['telephone beats mobile', 'Mobile|Telephone', phoneBreachesPipeline, 1],
    ['a company name beats a domain', 'Domain|Company Name', companyPipeline, 1],
    ['a domain beats a website', 'Website|Domain', companyPipeline, 1],
    ['company beats company name', 'Company Name|Company', companyPipeline, 1],
  ] as const)('%s', (_name, header, pipeline, index) => {
    expect(keyOf(header, pipeline)).toBe(index);
  });

  it.each([
    ['Work Email|Personal Email', genderPipeline, ['Work Email', 'Personal Email']],
    ['Email|E-mail', genderPipeline, ['Email', 'E-mail']],
    ['id|email|name|email', genderPipeline, ['email', 'email']],
    ['Mobile|Home Phone', phoneBreachesPipeline, ['Mobile', 'Home Phone']],
    ['Organization|Employer', companyPipeline, ['Organization', 'Employer']],
  ] as const)('%j is ambiguous_column naming both', (header, pipeline, candidates) => {
    const error = thrown(() => keyOf(header, pipeline));
    expect(error.code).toBe('ambiguous_column');
    expect(error.details).toMatchObject({ type: pipeline.type, candidates });
    for (const name of candidates) expect(error.message).toContain(`"${name}"`);
  });

  it('says how to choose: --column, the API field and lookup=TYPE:COLUMN', () => {
    const error = thrown(() => keyOf('id|Work Email|Personal Email'));
    expect(error.message).toBe(
      '2 columns of the header row could be the email column: "Work Email" (column 2) and "Personal Email" (column 3); ' +
        'choose one with --column "Work Email" (API field column, or lookup=gender:COLUMN)',
    );
  });

  it('says to rename a column when the candidates are spelt alike, since a name cannot tell them apart', () => {
    const error = thrown(() => keyOf('email|name|EMAIL'));
    expect(error.message).toBe('2 columns of the header row could be the email column: "email" (column 1) and "EMAIL" (column 3); columns are chosen by name, so rename one of them in the file');
  });

  it('in a job of several lookups, says lookup=TYPE:COLUMN', () => {
    const lookups = several('gender', 'company');
    const error = thrown(() => findKeyColumns(['Work Email', 'Personal Email', 'Company'], lookups, {}));
    expect(error.code).toBe('ambiguous_column');
    expect(error.message).toContain('choose one with lookup=gender:COLUMN, e.g. lookup=gender:Work Email');
  });

  it('no two kinds of key share a name, so one column never answers lookups of two kinds by default', () => {
    // Types of one key (gender and email_breaches both read an email) share their names on purpose:
    // `type=gender,email_breaches` looks up each address of the one email column twice.
    // A company is searched by its name or its domain, so the company lookup reads domain and website
    // columns as the domain report does: with both in one job, one domain column answers both, as
    // one email column answers gender and email_breaches. No other two kinds share a name.
    const byKey = new Map(Object.values(PIPELINES).map((p) => [p.keyHeader, new Set([p.keyHeader, ...p.keyAliases.flat()].map(normaliseHeader))]));
    expect([...byKey.keys()].sort()).toEqual(['company', 'domain', 'email', 'ip', 'phone']);
    const domainNames = byKey.get('domain')!;
    const all = [...byKey.entries()].flatMap(([key, set]) => [...set].filter((name) => key !== 'company' || !domainNames.has(name)));
    expect(new Set(all).size).toBe(all.length);
    for (const p of Object.values(PIPELINES)) expect(new Set([p.keyHeader, ...p.keyAliases.flat()].map(normaliseHeader))).toEqual(byKey.get(p.keyHeader));
  });

  it('finds every lookup of a job of several by its aliases', () => {
    const lookups = several('gender', 'company', 'phone_breaches');
    expect(findKeyColumns(['Organisation', 'Mobile', 'E-mail Address'], lookups, {}).indexes).toEqual([2, 0, 1]);
  });
});

describe('a column the caller names', () => {
  it('is compared like the aliases: without case, blanks, dashes and underscores', () => {
    expect(keyOf('id|Work Address|email', genderPipeline, 'work_address')).toBe(1);
    expect(keyOf('id|Business-E-Mail', genderPipeline, 'business e mail')).toBe(1);
  });

  it('prefers the cell spelt as given when several compare alike', () => {
    expect(keyOf('Work Email|work_email', genderPipeline, 'work_email')).toBe(1);
    expect(keyOf('Work Email|work_email', genderPipeline, ' WORK EMAIL ')).toBe(0);
  });

  it('is ambiguous when two cells are spelt alike and neither as given', () => {
    const error = thrown(() => keyOf('Work Email|work_email', genderPipeline, 'work-email'));
    expect(error.code).toBe('ambiguous_column');
  });

  it('beats the default names, even a valid key in column 1', () => {
    expect(keyOf('email|other', genderPipeline, 'other')).toBe(1);
  });

  it('not found: column_not_found, listing the header and how to name the column', () => {
    const error = thrown(() => keyOf('id|email|name', genderPipeline, 'work_email'));
    expect(error.code).toBe('column_not_found');
    expect(error.message).toBe(
      'no column named "work_email" in the header row ["id", "email", "name"] (names are compared without case, accents, blanks, dashes, underscores and dots); ' +
        'give one of these names with --column NAME (API field column, or lookup=gender:NAME)',
    );
    expect(error.details).toEqual({ column: 'work_email', header: ['id', 'email', 'name'] });
  });

  it('not found in a job of several lookups: says lookup=TYPE:NAME', () => {
    const error = thrown(() => findKeyColumns(['email', 'Firm'], jobLookups('gender', { lookups: [{ type: 'gender' }, { type: 'company', column: 'firma' }] }), {}));
    expect(error.code).toBe('column_not_found');
    expect(error.message).toContain('write lookup=company:NAME with one of these names');
  });
});

describe('no key column', () => {
  it('lists the header it saw, what it looked for, and how to name the column', () => {
    const error = thrown(() => keyOf('id|name|Adresse'));
    expect(error.code).toBe('no_key_column');
    expect(error.message).toBe(
      'found no email column in the header row ["id", "name", "Adresse"]; looked for "email", "email address", "primary email", "work email" ' +
        'and the other names the README lists for gender, and the first cell is not a valid email either. ' +
        'Name the key column with --column NAME (API field column, or lookup=gender:NAME).',
    );
    expect(error.details).toEqual({ type: 'gender', header: ['id', 'name', 'Adresse'] });
  });

  it('shows at most 20 header cells, each cut to 40 characters', () => {
    const header = [`${'x'.repeat(50)}`, ...Array.from({ length: 24 }, (_, i) => `c${i}`)];
    const error = thrown(() => findKeyColumn(header, companyPipeline, undefined));
    expect(error.message).toContain(`["${'x'.repeat(39)}…", "c0", `);
    expect(error.message).toContain('"c18" and 5 more]');
    expect(error.message).not.toContain('"c19"');
    expect((error.details as { header: string[] }).header).toHaveLength(20);
  });

  it('in a job of several lookups, names the lookup and says lookup=TYPE:COLUMN', () => {
    const error = thrown(() => findKeyColumns(['email', 'name'], several('gender', 'company'), {}));
    expect(isAppError(error, 'no_key_column')).toBe(true);
    expect(error.message).toContain('found no company column for the company lookup in the header row ["email", "name"]');
    expect(error.message).toContain('Name the column with lookup=company:COLUMN.');
  });
});

describe('a file with no header row', () => {
  it('is read from column 1 when its first cell is a valid key and no cell is named like the key', () => {
    expect(findKeyColumn(['jane@example.com', 'x'], genderPipeline, undefined)).toEqual({ header: ['email', 'column_2'], index: 0, firstRowIsData: true });
  });

  it('a data row whose other cell reads like an alias is still data, not a header', () => {
    const found = findKeyColumn(['+4930901820', 'Mobile'], phoneBreachesPipeline, undefined);
    expect(found).toMatchObject({ index: 0, firstRowIsData: true });
  });
});
