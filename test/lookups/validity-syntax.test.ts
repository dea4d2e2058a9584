import { describe, expect, it } from 'vitest';
import { checkSyntax } from '../../src/lookups/validity/syntax.js';
import { flagsOf } from '../../src/lookups/validity/flags.js';
import { classifyRcpt } from '../../src/lookups/validity/rcpt-reply.js';
import { providerRuleFor } from '../../src/lookups/validity/provider-rules.js';

describe('address syntax (RFC 5321/5322)', () => {
  it.each([
    ['Jane.Doe@Example.COM', 'jane.doe@example.com'],
    ['"john doe"@example.com', '"john doe"@example.com'],
    ['"a\\"b"@example.com', '"a\\"b"@example.com'],
    ['user+tag@example.com', 'user+tag@example.com'],
    ['jörg@bücher.de', undefined],
    ['info@bücher.de', 'info@xn--bcher-kva.de'],
    ['a@example.com.', 'a@example.com'],
  ])('%s reads as %s', (input, expected) => {
    const r = checkSyntax(input);
    if (expected === undefined) expect(r.ok).toBe(false);
    else expect(r).toMatchObject({ ok: true, address: expected });
  });

  it.each([
    ['no at sign', 'plainaddress'],
    ['empty local part', '@example.com'],
    ['double dot', 'a..b@example.com'],
    ['leading dot', '.a@example.com'],
    ['unclosed quote', '"abc@example.com'],
    ['single-label domain', 'a@localhost'],
    ['numeric TLD', 'a@example.123'],
    ['label with leading hyphen', 'a@-x.com'],
    ['local part over 64 octets', `${'a'.repeat(65)}@example.com`],
    ['address over 254 octets', `${'a'.repeat(64)}@${'b'.repeat(62)}.${'c'.repeat(62)}.${'d'.repeat(62)}.com`],
  ])('refuses %s', (_name, input) => {
    expect(checkSyntax(input).ok).toBe(false);
  });

  it('gives Gmail addresses their documented canonical form, and no other provider one', () => {
    expect(checkSyntax('J.Doe+news@googlemail.com')).toMatchObject({ canonical: 'jdoe@gmail.com' });
    expect(checkSyntax('j.doe+news@gmail.com')).toMatchObject({ canonical: 'jdoe@gmail.com' });
    expect(checkSyntax('j.doe+news@example.com')).toMatchObject({ canonical: null });
  });
});

describe('flags from the shipped lists', () => {
  it('marks disposable domains (and their subdomains), role accounts without +tags, and free providers', () => {
    expect(flagsOf('x', 'mailinator.com').disposable).toBe(true);
    expect(flagsOf('x', 'eu.mailinator.com').disposable).toBe(true);
    expect(flagsOf('x', 'acme-widgets.test')).toEqual({ disposable: false, role_account: false, free_provider: false });
    expect(flagsOf('sales+q3', 'example.com').role_account).toBe(true);
    expect(flagsOf('jane', 'gmail.com').free_provider).toBe(true);
  });
});

describe('RCPT reply codes', () => {
  const reply = (code: number, enhanced: string | null, text = '') => ({ code, enhanced, text, lines: [text] });
  it.each([
    [reply(250, '2.1.5'), { kind: 'accepted' }],
    [reply(251, null), { kind: 'accepted' }],
    [reply(550, '5.1.1'), { kind: 'rejected', reason: 'mailbox_not_found' }],
    [reply(553, '5.1.3'), { kind: 'rejected', reason: 'mailbox_not_found' }],
    [reply(550, '5.2.1'), { kind: 'rejected', reason: 'mailbox_disabled' }],
    [reply(552, null), { kind: 'rejected', reason: 'mailbox_full' }],
    [reply(450, '4.2.2'), { kind: 'temporary' }],
    [reply(550, '5.7.1', 'blocked by Spamhaus'), { kind: 'rejected', reason: 'policy_block' }],
    [reply(550, null, 'No such user here'), { kind: 'rejected', reason: 'mailbox_not_found' }],
    [reply(550, null, 'Service unavailable; client host blocked'), { kind: 'rejected', reason: 'rejected' }],
    [reply(451, '4.7.1'), { kind: 'temporary' }],
    [reply(421, null), { kind: 'temporary' }],
    [reply(452, '4.5.3'), { kind: 'too_many_recipients' }],
  ])('%o is %o', (r, expected) => {
    expect(classifyRcpt(r)).toEqual(expected);
  });
});

describe('provider rules', () => {
  it('match MX hosts by suffix, not by substring', () => {
    expect(providerRuleFor('mta7.am0.yahoodns.net.')?.behaviour).toBe('accepts_all');
    expect(providerRuleFor('contoso-com.mail.protection.outlook.com')?.provider).toMatch(/Microsoft/);
    expect(providerRuleFor('notyahoodns.net')).toBeUndefined();
    expect(providerRuleFor('mx.example.com')).toBeUndefined();
  });
});
