import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { resultRecords } from '../support/csv-fixture.js';
import { openTestEngine, tempDir, type TestEngine } from '../support/test-engine.js';

let e: TestEngine;
let dir: string;
beforeAll(async () => {
  e = await openTestEngine();
  dir = tempDir();
});
afterAll(async () => {
  await e.close();
});

async function run(name: string, content: Buffer, options: { delimiter?: string; encoding?: string } = {}) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  const account = await e.deps.billing.createAccount({ credits: 1000, now: Date.now() });
  const result = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(dir, `${name}-out`), ...options });
  return { ...result, balance: (await e.deps.billing.requireAccount(account.id)).credits };
}

const PEOPLE = [
  ['1', 'jose.garcia@example.com', 'José García', 'Málaga'],
  ['2', 'maria.muller@example.com', 'María Müller', 'Köln'],
  ['3', 'francois.dupre@example.com', 'François “Fran” Dupré', 'Besançon €'],
];

function table(delimiter: string): string {
  return [['id', 'email', 'name', 'city'], ...PEOPLE].map((r) => r.join(delimiter)).join('\r\n') + '\r\n';
}

/** Windows-1252 bytes: Latin-1 for the accents, the 0x80-0x9F block for the quotes and the euro. */
function windows1252(text: string): Buffer {
  return Buffer.from(text.replace(/“/g, '\x93').replace(/”/g, '\x94').replace(/€/g, '\x80'), 'latin1');
}

async function expectPeople(result: Awaited<ReturnType<typeof run>>): Promise<void> {
  expect(result.summary).toMatchObject({ status: 'completed', credits_used: 3 });
  const bytes = fs.readFileSync(result.files.all!);
  // Output is UTF-8 whatever came in: decoding it strictly must not fail.
  expect(() => new TextDecoder('utf-8', { fatal: true }).decode(bytes)).not.toThrow();
  const rows = await resultRecords(bytes);
  expect(rows.map((r) => [r.id, r.email, r.name, r.city])).toEqual(PEOPLE);
  expect(rows.map((r) => r.status)).toEqual(['ok', 'ok', 'ok']);
}

describe('input files from other locales run through the engine', () => {
  it('a semicolon-separated Windows-1252 export gives its rows in UTF-8, accents intact', async () => {
    const input = windows1252(table(';'));
    expect(() => new TextDecoder('utf-8', { fatal: true }).decode(input)).toThrow();
    await expectPeople(await run('semicolon-1252.csv', input));
  });

  it('a tab-separated UTF-16LE file with a BOM (Excel "Unicode Text") gives the same rows', async () => {
    await expectPeople(await run('tab-utf16le.txt', Buffer.from('\uFEFF' + table('\t'), 'utf16le')));
  });

  it('a pipe-separated UTF-16BE file declared with --encoding and --delimiter gives the same rows', async () => {
    const input = Buffer.from(table('|'), 'utf16le').swap16();
    await expectPeople(await run('pipe-utf16be.txt', input, { delimiter: 'pipe', encoding: 'UTF-16BE' }));
  });
});

describe('input files the engine refuses, charging nothing', () => {
  const refused: [name: string, input: Buffer, code: string][] = [
    ['UTF-16 without a BOM', Buffer.from(table(','), 'utf16le'), 'utf16_without_bom'],
    ['a header that splits on two delimiters alike', Buffer.from('email;notes, more\nann@example.com;ok, fine\n'), 'ambiguous_delimiter'],
  ];
  it.each(refused)('%s fails the job with a code that says how to fix it', async (name, input, code) => {
    const result = await run(name.replace(/\W/g, '-'), input);
    expect(result.summary).toMatchObject({ status: 'failed', reason: code, credits_used: 0 });
    expect(result.summary.error_message).toMatch(/--(encoding|delimiter)/);
    expect(result.balance).toBe(1000);
  });

  it('the same files run once the caller gives what detection could not tell', async () => {
    const utf16 = await run('utf16-declared.csv', Buffer.from(table(','), 'utf16le'), { encoding: 'utf-16le' });
    await expectPeople(utf16);
    const ambiguous = await run('ambiguous-declared.csv', Buffer.from('email;notes, more\nann@example.com;ok, fine\n'), { delimiter: ';' });
    expect(ambiguous.summary.status).toBe('completed');
    expect((await resultRecords(fs.readFileSync(ambiguous.files.all!)))[0]).toMatchObject({ email: 'ann@example.com', 'notes, more': 'ok, fine' });
  });

  it('a bad --delimiter or --encoding is refused before any job is made', async () => {
    const file = path.join(dir, 'plain.csv');
    fs.writeFileSync(file, 'email\nann@example.com\n');
    await expect(runJob(e, { file, type: 'gender', delimiter: 'colon' })).rejects.toMatchObject({ code: 'bad_argument' });
    await expect(runJob(e, { file, type: 'gender', encoding: 'ebcdic' })).rejects.toMatchObject({ code: 'bad_argument' });
  });
});
