import { describe, expect, it } from 'vitest';
import { isAppError } from '../src/shared/errors.js';
import { genderPipeline, isValidEmail } from './gender.js';
import { PIPELINES, pipelineFor } from './index.js';

const LONG_LABEL = 'a'.repeat(63);

describe('genderPipeline.normalise', () => {
  const valid: [raw: string, key: string][] = [
    ['john@example.com', 'john@example.com'],
    ['  John.Smith@Example.COM \t', 'john.smith@example.com'],
    ['john.smith+news@example.com', 'john.smith+news@example.com'],
    ["o'brien@example.ie", "o'brien@example.ie"],
    ["a!#$%&'*+/=?^_`{|}~-z@example.com", "a!#$%&'*+/=?^_`{|}~-z@example.com"],
    ['x@sub.domain.example.co.uk', 'x@sub.domain.example.co.uk'],
    ['x@my-host.example.org', 'x@my-host.example.org'],
    ['x@123.example.com', 'x@123.example.com'],
    ['x@example.xn--p1ai', 'x@example.xn--p1ai'],
    ['x@xn--bcher-kva.example', 'x@xn--bcher-kva.example'],
    ['1234@example.io', '1234@example.io'],
    [`${'l'.repeat(64)}@example.com`, `${'l'.repeat(64)}@example.com`],
    [`x@${LONG_LABEL}.com`, `x@${LONG_LABEL}.com`],
    ['\u00a0x@example.com\u00a0', 'x@example.com'],
  ];
  it.each(valid)('%j is valid with key %j', (raw, key) => {
    expect(genderPipeline.normalise(raw)).toEqual({ ok: true, key });
  });

  const invalid: [raw: string, code: string][] = [
    ['', 'empty_value'],
    ['   \t ', 'empty_value'],
    ['plainaddress', 'invalid_email'],
    ['@example.com', 'invalid_email'],
    ['john@', 'invalid_email'],
    ['john@@example.com', 'invalid_email'],
    ['a@b@example.com', 'invalid_email'],
    ['.john@example.com', 'invalid_email'],
    ['john.@example.com', 'invalid_email'],
    ['jo..hn@example.com', 'invalid_email'],
    ['john smith@example.com', 'invalid_email'],
    ['"john smith"@example.com', 'invalid_email'],
    ['john(comment)@example.com', 'invalid_email'],
    ['john,smith@example.com', 'invalid_email'],
    ['josé@example.com', 'invalid_email'],
    [`${'l'.repeat(65)}@example.com`, 'invalid_email'],
    ['john@localhost', 'invalid_email'],
    ['john@[192.0.2.1]', 'invalid_email'],
    ['john@192.0.2.1', 'invalid_email'],
    ['john@example.c', 'invalid_email'],
    ['john@example.c0m', 'invalid_email'],
    ['john@example.com.', 'invalid_email'],
    ['john@.example.com', 'invalid_email'],
    ['john@example..com', 'invalid_email'],
    ['john@-example.com', 'invalid_email'],
    ['john@example-.com', 'invalid_email'],
    ['john@exa_mple.com', 'invalid_email'],
    ['john@bücher.example', 'invalid_email'],
    [`x@${'a'.repeat(64)}.com`, 'invalid_email'],
    [`${'l'.repeat(64)}@${`${LONG_LABEL}.`.repeat(3)}${'a'.repeat(58)}.com`, 'invalid_email'],
    ['john@example.com>', 'invalid_email'],
  ];
  it.each(invalid)('%j is %s', (raw, code) => {
    const result = genderPipeline.normalise(raw);
    expect(result).toMatchObject({ ok: false, code });
    expect(result.ok ? '' : result.message).not.toBe('');
  });

  // Issue 19: the forms mail clients, CRMs and web pages export; the key is the bare address.
  const forms: [raw: string, key: string][] = [
    ['John Smith <john@example.com>', 'john@example.com'],
    ['Jane Doe <Jane@Example.com>', 'jane@example.com'],
    ['"Jane Doe" <jane@example.com>', 'jane@example.com'],
    ['"Doe, Jane" <jane@example.com>', 'jane@example.com'],
    ['Doe, Jane <jane@example.com>', 'jane@example.com'],
    ['Jane Doe<jane@example.com>', 'jane@example.com'],
    ['<jane@example.com>', 'jane@example.com'],
    ['Jane Doe < jane@example.com >', 'jane@example.com'],
    ['jane@example.com <jane@example.com>', 'jane@example.com'],
    ['"jane@example.com" <jane@example.com>', 'jane@example.com'],
    ['Jane <mailto:jane@example.com>', 'jane@example.com'],
    ['mailto:john@example.com', 'john@example.com'],
    ['MAILTO:John@Example.com', 'john@example.com'],
    ['Mailto:jane@example.com?subject=Hello%20there&body=x', 'jane@example.com'],
    ['mailto:jane%2Bnews@example.com', 'jane+news@example.com'],
    ['"jane@example.com"', 'jane@example.com'],
    ["'jane@example.com'", 'jane@example.com'],
    ['“jane@example.com”', 'jane@example.com'],
    ['‘jane@example.com’', 'jane@example.com'],
    ['«jane@example.com»', 'jane@example.com'],
    ['" jane@example.com "', 'jane@example.com'],
    ['"Jane Doe <jane@example.com>"', 'jane@example.com'],
    ['\u200bjane@example.com\u200b', 'jane@example.com'],
    ['\ufeff\u00a0jane@example.com\u2060 ', 'jane@example.com'],
  ];
  it.each(forms)('the cell %j gives the address %j', (raw, key) => {
    expect(genderPipeline.normalise(raw)).toEqual({ ok: true, key });
  });

  const refusedForms: [raw: string, code: string][] = [
    ['a@x.com, b@y.com', 'multiple_addresses'],
    ['a@x.com;b@y.com', 'multiple_addresses'],
    ['a@x.com b@y.com', 'multiple_addresses'],
    ['a@x.com\nb@y.com', 'multiple_addresses'],
    ['a@x.com, a@x.com', 'multiple_addresses'],
    ['Ann <a@x.com>, Bob <b@y.com>', 'multiple_addresses'],
    ['a@x.com <b@y.com>', 'multiple_addresses'],
    ['mailto:a@x.com,b@y.com', 'multiple_addresses'],
    ['Jane Doe <>', 'invalid_email'],
    ['Jane <Doe> <jane@example.com>', 'invalid_email'],
    ['Jane Doe <jane@example.com', 'invalid_email'],
    ['<jane smith@example.com>', 'invalid_email'],
    ['mailto:', 'invalid_email'],
    ['mailto:jane%zz@example.com', 'invalid_email'],
    ['""', 'empty_value'],
    ['\u200b “ ” \u200b', 'empty_value'],
    ['jane\u200b@example.com', 'invalid_email'],
  ];
  it.each(refusedForms)('the cell %j is %s', (raw, code) => {
    const result = genderPipeline.normalise(raw);
    expect(result).toMatchObject({ ok: false, code });
    expect(result.ok ? '' : result.message).not.toBe('');
  });

  it('one address in any of its forms is one key, so dedupe and billing count it once', () => {
    const cells = ['jane@example.com', 'Jane <JANE@example.com>', 'mailto:Jane@Example.com', '"jane@example.com"', '\u00a0jane@EXAMPLE.com'];
    expect(new Set(cells.map((raw) => genderPipeline.normalise(raw)).map((k) => (k.ok ? k.key : k.code)))).toEqual(new Set(['jane@example.com']));
  });

  it('an address of exactly 254 characters passes and one of 255 does not', () => {
    const domain = `${`${LONG_LABEL}.`.repeat(2)}${'b'.repeat(61)}.com`;
    const at254 = `${'l'.repeat(254 - domain.length - 1)}@${domain}`;
    expect(at254).toHaveLength(254);
    expect(isValidEmail(at254)).toBe(true);
    expect(isValidEmail(`l${at254}`)).toBe(false);
  });

  it('keys compare without case, so duplicates differing in case are one key', () => {
    const keys = ['Anna@Example.com', 'anna@example.COM', ' ANNA@EXAMPLE.COM'].map((raw) => genderPipeline.normalise(raw));
    expect(new Set(keys.map((k) => (k.ok ? k.key : k.code)))).toEqual(new Set(['anna@example.com']));
  });
});

describe('genderPipeline output', () => {
  it('declares its columns and lookup', () => {
    expect(genderPipeline).toMatchObject({ type: 'gender', lookupKind: 'gender', keyHeader: 'email' });
    expect(genderPipeline.keyAliases.flat()).toEqual(expect.arrayContaining(['email address', 'work email', 'mail', 'courriel']));
    expect(genderPipeline.resultColumns).toEqual(['gender', 'country', 'probability']);
  });

  const cells: [result: Parameters<typeof genderPipeline.resultCells>[0], cells: string[], found: boolean][] = [
    [{ gender: 'male', country: null, probability: 88 }, ['male', '', '88'], true],
    [{ gender: 'female', country: 'IT', probability: 67 }, ['female', 'IT', '67'], true],
    [{ gender: 'unknown', country: null, probability: 0 }, ['unknown', '', '0'], false],
  ];
  it.each(cells)('%j -> %j, found %s', (result, expected, found) => {
    expect(genderPipeline.resultCells(result)).toEqual(expected);
    expect(genderPipeline.isFound(result)).toBe(found);
  });
});

describe('pipelineFor', () => {
  it('finds the gender pipeline', () => {
    expect(pipelineFor('gender')).toBe(genderPipeline);
    expect(PIPELINES.gender).toBe(genderPipeline);
  });

  it.each([['phone'], ['Gender'], ['toString'], ['__proto__'], ['']])('%j is unknown_job_type with status 400', (type) => {
    let caught: unknown;
    try {
      pipelineFor(type);
    } catch (e: unknown) {
      caught = e;
    }
    expect(isAppError(caught, 'unknown_job_type')).toBe(true);
    expect(caught).toMatchObject({ statusCode: 400 });
  });
});
