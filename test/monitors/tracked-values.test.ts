import { describe, expect, it } from 'vitest';
import { highValueAlert } from '../../src/monitors/high-value.js';
import { compareProfiles, inputCell, profileOf, unescapeCell } from '../../src/monitors/tracked-values.js';
import { normaliseCompany } from '../../pipelines/company.js';

describe('comparing a target with its last result', () => {
  const before = { breached: true, count: 2, last: '2020-01-01', names: ['A', 'B'], note: 'x' };
  const fields = Object.keys(before);
  it.each([
    ['a first result is a baseline', 'any_change', null, before, null],
    ['nothing changed', 'any_change', before, { ...before }, null],
    ['any_change: a value altered, a list shrunk', 'any_change', before, { ...before, last: '2021-01-01', names: ['A'] }, { last: { old: '2020-01-01', new: '2021-01-01' }, names: { old: ['A', 'B'], new: ['A'] } }],
    ['new_only: an altered or cleared value is not a change', 'new_only', before, { ...before, last: '2021-01-01', note: '' }, null],
    ['new_only: a list that lost an item is not a change', 'new_only', before, { ...before, names: ['A'] }, null],
    ['new_only: a list that gained an item is', 'new_only', before, { ...before, names: ['A', 'B', 'C'] }, { names: { old: ['A', 'B'], new: ['A', 'B', 'C'] } }],
    ['new_only: a number that grew is, one that fell is not', 'new_only', before, { ...before, count: 3 }, { count: { old: 2, new: 3 } }],
    ['new_only: a count that fell', 'new_only', before, { ...before, count: 1 }, null],
    ['new_only: a value where there was none', 'new_only', { ...before, breached: false, last: null }, before, { breached: { old: false, new: true }, last: { old: null, new: '2020-01-01' } }],
  ] as const)('%s', (_, mode, previous, next, expected) => {
    expect(compareProfiles(previous as never, next as never, fields, mode)).toEqual(expected);
  });

  it('compares only the tracked fields', () => {
    expect(compareProfiles(before, { ...before, count: 5, note: 'y' }, ['note'], 'any_change')).toEqual({ note: { old: 'x', new: 'y' } });
  });
});

describe('profiles from result cells', () => {
  it('reads an email row: lists split, services sorted, empty dates null', () => {
    expect(profileOf('email', ['true', '2', '', '2024-01-01', 'Zeta;Alpha', 'Email addresses;Passwords'])).toEqual({
      breached: true, count: 2, first_breach: null, last_breach: '2024-01-01', services: ['Alpha', 'Zeta'], exposed_data: ['Email addresses', 'Passwords'], breaches: ['Zeta', 'Alpha'],
    });
  });

  it('undoes formula escapes and only those', () => {
    expect(unescapeCell("'=cmd|x")).toBe('=cmd|x');
    expect(unescapeCell("'quoted")).toBe("'quoted");
    expect(profileOf('company', ["'=HYPERLINK(x)", '', '', '12', '', '', ''])).toMatchObject({ name: '=HYPERLINK(x)', employee_count: 12, domain: null });
  });

  it.each(['domain:acme.com', 'name:acme inc', 'name:o\'reilly & sons'])('a company key %s is its own input cell read back', (key) => {
    const read = normaliseCompany(inputCell('company', key));
    expect(read.ok && read.key).toBe(key);
  });
});

describe('high-value alerts', () => {
  it('an email whose exposed data newly include passwords; never a baseline', () => {
    const old = profileOf('email', ['true', '1', '', '', 'A', 'Names']);
    const next = profileOf('email', ['true', '2', '', '', 'A;B', 'Names;Passwords']);
    expect(highValueAlert('email', 't', old, next)).toMatchObject({ kind: 'passwords_exposed', new: { breaches: ['A', 'B'] } });
    expect(highValueAlert('email', 't', null, next)).toBeNull();
    expect(highValueAlert('email', 't', next, next)).toBeNull();
  });

  it('a phone in its first breach; a company whose match changed', () => {
    expect(highValueAlert('phone', 't', { breached: false }, { breached: true, total_breaches: 1, summary: 's' })).toMatchObject({ kind: 'newly_breached' });
    expect(highValueAlert('phone', 't', { breached: true }, { breached: true })).toBeNull();
    expect(highValueAlert('company', 't', { name: 'Acme', domain: 'acme.com' }, { name: 'Acme', domain: 'acme.io' })).toMatchObject({ kind: 'company_changed' });
    expect(highValueAlert('company', 't', { name: null, domain: null }, { name: 'Acme', domain: 'acme.io' })).toBeNull();
  });
});
