import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runJob } from '../../src/cli/run-command.js';
import { parseCsv, resultRecords } from '../support/csv-fixture.js';
import { openTestEngine, tempDir, type TestEngine } from '../support/test-engine.js';

let e: TestEngine;
let dir: string;
beforeAll(async () => {
  e = await openTestEngine({ SLUICE_MAX_LINE_BYTES: '2048' });
  dir = tempDir();
});
afterAll(async () => {
  await e.close();
});

async function run(name: string, content: string | Buffer, column?: string) {
  const file = path.join(dir, name);
  fs.writeFileSync(file, content);
  const account = await e.deps.billing.createAccount({ credits: 1000, now: Date.now() });
  const result = await runJob(e, { file, type: 'gender', accountId: account.id, outDir: path.join(dir, `${name}-out`), ...(column ? { column } : {}) });
  return { ...result, balance: (await e.deps.billing.requireAccount(account.id)).credits };
}

const rejected: [string, string | Buffer, string][] = [
  ['empty file', '', 'empty_file'],
  ['header only', 'id,email,name\n', 'no_rows'],
  ['blank lines only', '\n\n\r\n', 'no_rows'],
  ['no usable column', 'id,name\n1,John\n2,Mary\n', 'no_key_column'],
  ['invalid UTF-8 beside valid UTF-8', Buffer.concat([Buffer.from('email\njosé@example.com\n'), Buffer.from([0xc3, 0x28]), Buffer.from('\n')]), 'invalid_utf8'],
  ['a very long line', `email,notes\njohn@example.com,${'x'.repeat(5000)}\n`, 'line_too_long'],
  ['an unbalanced quote', 'email,note\njohn@example.com,"never closed\nmary@example.com,x\n', 'malformed_csv'],
  ['a stray quote in a quoted field', 'email,note\njohn@example.com,"a "b" c"\n', 'malformed_csv'],
  ['a gzip file', zlib.gzipSync('email\njohn@example.com\n'), 'compressed_file'],
  ['a binary file', Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52]), 'binary_file'],
];

describe('a file the engine cannot read', () => {
  it.each(rejected)('%s fails the job with a clear code and charges nothing', async (name, content, code) => {
    const result = await run(name.replace(/\W/g, '-'), content);
    expect(result.summary).toMatchObject({ status: 'failed', reason: code, credits_used: 0 });
    expect(result.summary.error_message).toBeTruthy();
    expect(result.balance).toBe(1000);
    expect(await e.deps.billing.chargeCountForJob(result.summary.id)).toBe(0);
  });

  it('a --column that is not in the header is refused with column_not_found before any job is made (issue 33)', async () => {
    await expect(run('no-such-column', 'email\njohn@example.com\n', 'work_email')).rejects.toMatchObject({ code: 'column_not_found', message: expect.stringContaining('nothing was submitted') });
  });
});

describe('awkward but valid CSV', () => {
  it('handles a BOM, CRLF, quoted commas, quotes and newlines, and blank lines', async () => {
    const content = '\uFEFFid,EMAIL,note\r\n1,john.smith@example.com,"a, b"\r\n\r\n2,"maria@example.com","say ""hi"""\r\n3,bob@example.com,"two\r\nlines"\r\n';
    const result = await run('awkward.csv', content);
    expect(result.summary.status).toBe('completed');
    const rows = await parseCsv(fs.readFileSync(result.files.all!));
    expect(rows[0]).toEqual(['id', 'EMAIL', 'note', 'gender', 'country', 'probability', 'status', 'credits', 'cached', 'error']);
    expect(rows.slice(1).map((r) => r.slice(0, 3))).toEqual([
      ['1', 'john.smith@example.com', 'a, b'],
      ['2', 'maria@example.com', 'say "hi"'],
      ['3', 'bob@example.com', 'two\r\nlines'],
    ]);
    expect(rows.slice(1).map((r) => r[3])).toEqual(['male', 'female', 'male']);
    expect(result.summary.credits_used).toBe(3);
  });

  it('keeps bad rows as data: counted, with an error code, never charged', async () => {
    const result = await run('bad-rows.csv', 'email,n\njohn@example.com,1\n,2\nnot an email,3\nJOHN@example.com ,4\nshort\n');
    const rows = await resultRecords(fs.readFileSync(result.files.all!));
    expect(rows.map((r) => [r.n, r.status, r.credits, r.error])).toEqual([
      ['1', 'ok', '1', ''],
      ['2', 'invalid', '0', 'empty_value'],
      ['3', 'invalid', '0', 'invalid_email'],
      ['4', 'duplicate', '0', ''],
      ['', 'invalid', '0', 'invalid_email'],
    ]);
    expect(result.summary.rows).toMatchObject({ total: 5, invalid: 3, duplicate: 1 });
    expect(result.balance).toBe(999);
  });
});

describe('results are safe to open in a spreadsheet', () => {
  it('escapes formula cells and round-trips every other original cell exactly', async () => {
    const cells = ['=1+1', '+cmd|calc', '-2+3', '@SUM(A1)', '\tx', '\rx', '-12.5', 'plain, with comma', ' spaced ', 'quote "q"', 'ünïcødé'];
    const content = `email,${cells.map((_, i) => `c${i}`).join(',')}\njohn@example.com,${cells.map((c) => `"${c.replace(/"/g, '""')}"`).join(',')}\n`;
    const result = await run('formulas.csv', content);
    const [, row] = await parseCsv(fs.readFileSync(result.files.all!));
    expect(row!.slice(1, 1 + cells.length)).toEqual([
      "'=1+1",
      "'+cmd|calc",
      "'-2+3",
      "'@SUM(A1)",
      "'\tx",
      "'\rx",
      '-12.5',
      'plain, with comma',
      ' spaced ',
      'quote "q"',
      'ünïcødé',
    ]);
  });
});
