import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalPasswordRange } from '../../src/lookups/password/local-password-range.js';
import { INDEX_DIR, INDEX_POINTER } from '../../src/lookups/password/password-range-format.js';
import { importPasswords } from '../../src/lookups/password/password-range-import.js';
import { isAppError } from '../../src/shared/errors.js';
import { TEST_STORES, tempDir } from '../support/test-engine.js';
import { NOW, openTestStore, type TestStore } from '../support/test-store.js';
import { generatedHashes, sha1Hex, writeCombined, writePrefixDir } from '../support/password-hashes.js';

const ROWS = generatedHashes(100_000);

describe.each(TEST_STORES)('sluice import passwords, with the pointer in the %s store', (kind) => {
  let opened: TestStore;
  let dataDir: string;
  beforeAll(async () => {
    opened = await openTestStore(kind);
    dataDir = tempDir('sluice-passwords-');
  });
  afterAll(async () => {
    await opened.close();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  const options = () => ({ dataDir, records: opened.store.limits, now: () => NOW });
  const reader = () => new LocalPasswordRange({ ...options(), viewMs: 0 });

  it('imports 100,000 generated hashes; every prefix reads back exactly its rows, in order, with their counts', async () => {
    const file = writeCombined(path.join(dataDir, 'combined.txt'), ROWS);
    const summary = await importPasswords(file, options());
    expect(summary).toMatchObject({ lines: 100_000, imported: 100_000, duplicates: 0, padding: 0, invalid: 0, ignored_files: 0 });
    expect(JSON.parse((await opened.store.limits.readShared(INDEX_POINTER))!)).toEqual({ file: summary.index_file, records: 100_000, imported_at: new Date(NOW).toISOString() });

    const byPrefix = new Map<string, { suffix: string; count: number }[]>();
    for (const r of ROWS) {
      const list = byPrefix.get(r.hash.slice(0, 5)) ?? [];
      list.push({ suffix: r.hash.slice(5), count: r.count });
      byPrefix.set(r.hash.slice(0, 5), list);
    }
    // The pointer read once: 63,000 ranges need not be 63,000 reads of the store.
    const range = new LocalPasswordRange({ ...options(), viewMs: 60_000 });
    // Every prefix that holds rows, and a spread of empty ones, including both ends of the table.
    for (const [prefix, rows] of byPrefix) expect(await range.range(prefix)).toEqual({ ok: true, rows });
    for (const prefix of ['00000', 'FFFFF', 'fffff', '7A3C0']) {
      expect(await range.range(prefix)).toEqual({ ok: true, rows: byPrefix.get(prefix.toUpperCase()) ?? [] });
    }
    expect(await range.range('0000G')).toMatchObject({ ok: false, code: 'invalid_prefix', retryable: false });
    await range.close();
  });

  it('reads a directory of one file per prefix into the very same index file as the combined file', async () => {
    const rows = ROWS.slice(0, 3_000);
    const combined = await importPasswords(writeCombined(path.join(dataDir, 'small.txt'), rows), options());
    const dir = writePrefixDir(path.join(dataDir, 'by-prefix'), rows);
    fs.writeFileSync(path.join(dir, 'README.md'), 'not a range');
    const byDir = await importPasswords(dir, options());
    expect(byDir).toMatchObject({ lines: 3_000, imported: 3_000, invalid: 0, ignored_files: 1 });
    // Named by content: a machine that imports the same data in either form points where this one does.
    expect(byDir.index_file).toBe(combined.index_file);
    expect(fs.readdirSync(path.join(dataDir, INDEX_DIR))).toEqual([byDir.index_file]);
  });

  it('counts bad lines by code and line, skips padding rows and repeats, and still imports the good lines', async () => {
    const [a, b, c] = [sha1Hex('alpha'), sha1Hex('bravo'), sha1Hex('charlie')].sort() as [string, string, string];
    const lines = [
      `${a}:10`,
      `${a}:10`,
      'not a hash line',
      '',
      `${b}:0`,
      `${b.slice(0, 39)}:5`,
      `${b}:-1`,
      `${b}:x`,
      `${'Z'.repeat(40)}:3`,
      'A'.repeat(5_000),
      `  ${c.toLowerCase()}:7  `,
    ];
    const summary = await importPasswords(writeLines(path.join(dataDir, 'messy.txt'), lines), options());
    expect(summary).toMatchObject({ lines: 10, imported: 2, duplicates: 1, padding: 1, invalid: 6, invalid_by_code: { invalid_hash_line: 6 } });
    expect(summary.first_invalid.map((i) => i.line)).toEqual([3, 6, 7, 8, 9, 10]);
    const range = reader();
    expect(await range.range(c.slice(0, 5))).toEqual({ ok: true, rows: [{ suffix: c.slice(5), count: 7 }] });
    await range.close();
  });

  it('an import that fails half way leaves the previous index in use and no file of its own behind', async () => {
    const first = await importPasswords(writeCombined(path.join(dataDir, 'good.txt'), ROWS.slice(0, 500)), options());
    const range = reader();
    const probe = ROWS[10]!;
    expect(await range.range(probe.hash.slice(0, 5))).toMatchObject({ ok: true, rows: expect.arrayContaining([{ suffix: probe.hash.slice(5), count: probe.count }]) });

    const unsorted = [...ROWS.slice(0, 2_000)];
    [unsorted[1_500], unsorted[1_501]] = [unsorted[1_501]!, unsorted[1_500]!];
    const error = await importPasswords(writeCombined(path.join(dataDir, 'unsorted.txt'), unsorted), options()).catch((e: unknown) => e);
    expect(isAppError(error) && error.code).toBe('unsorted_input');
    expect(isAppError(error) && error.details).toEqual({ file: 'unsorted.txt', line: 1_502 });
    expect(JSON.parse((await opened.store.limits.readShared(INDEX_POINTER))!).file).toBe(first.index_file);
    expect(fs.readdirSync(path.join(dataDir, INDEX_DIR))).toEqual([first.index_file]);
    expect(await range.range(probe.hash.slice(0, 5))).toMatchObject({ ok: true, rows: expect.arrayContaining([{ suffix: probe.hash.slice(5), count: probe.count }]) });
    await range.close();
  });

  it('a killed import leaves its temporary file, which the next import removes; a missing input is refused', async () => {
    const dir = path.join(dataDir, INDEX_DIR);
    // A pid no process has: what a kill -9 leaves (test/cli/password-import.test.ts kills a real one).
    const leftover = path.join(dir, 'import-999999999-abcdef.tmp');
    fs.writeFileSync(leftover, 'half an index');
    const summary = await importPasswords(writeCombined(path.join(dataDir, 'again.txt'), ROWS.slice(0, 100)), options());
    expect(fs.readdirSync(dir)).toEqual([summary.index_file]);
    const missing = await importPasswords(path.join(dataDir, 'nope.txt'), options()).catch((e: unknown) => e);
    expect(isAppError(missing) && missing.code).toBe('bad_argument');
    // NTLM hashes (32 hex digits), or an empty file: nothing to import, and the good index stays.
    for (const lines of [['8846F7EAEE8FB117AD06BDD830B7586C:52579'], []]) {
      const empty = await importPasswords(writeLines(path.join(dataDir, 'ntlm.txt'), lines), options()).catch((e: unknown) => e);
      expect(isAppError(empty) && empty.code).toBe('no_rows');
      expect(JSON.parse((await opened.store.limits.readShared(INDEX_POINTER))!).file).toBe(summary.index_file);
      expect(fs.readdirSync(dir)).toEqual([summary.index_file]);
    }
  });

  it('lookups that arrive while the index is being opened wait for it, and none answers from no index', async () => {
    await importPasswords(writeCombined(path.join(dataDir, 'together.txt'), ROWS.slice(0, 2_000)), options());
    const range = new LocalPasswordRange(options());
    const probes = ROWS.slice(0, 20);
    // One after another a turn of the event loop apart: some land while the pointer is read, some
    // while the 8 MB table is, none may answer from no index.
    const pending: Promise<unknown>[] = [];
    for (const r of probes) {
      pending.push(range.range(r.hash.slice(0, 5)));
      await new Promise((resolve) => setImmediate(resolve));
    }
    const answers = await Promise.all(pending);
    answers.forEach((answer, i) => expect(answer).toMatchObject({ ok: true, rows: expect.arrayContaining([{ suffix: probes[i]!.hash.slice(5), count: probes[i]!.count }]) }));
    await range.close();
  });

  it('a running reader moves to a new import once its view of the pointer expires', async () => {
    await importPasswords(writeCombined(path.join(dataDir, 'v1.txt'), ROWS.slice(0, 100)), options());
    let now = NOW;
    const range = new LocalPasswordRange({ dataDir, records: opened.store.limits, now: () => now, viewMs: 10_000 });
    const late = ROWS[99_999]!;
    expect(await range.range(late.hash.slice(0, 5))).toEqual({ ok: true, rows: [] });
    await importPasswords(writeCombined(path.join(dataDir, 'v2.txt'), ROWS.slice(99_900)), options());
    expect(await range.range(late.hash.slice(0, 5))).toEqual({ ok: true, rows: [] });
    now += 10_001;
    expect(await range.range(late.hash.slice(0, 5))).toMatchObject({ ok: true, rows: expect.arrayContaining([{ suffix: late.hash.slice(5), count: late.count }]) });
    await range.close();
  });
});

describe('the range index without an import', () => {
  it('says provider_unavailable, not retryable, and names the command', async () => {
    const opened = await openTestStore('sqlite');
    const range = new LocalPasswordRange({ dataDir: tempDir('sluice-passwords-'), records: opened.store.limits, now: () => NOW });
    const outcome = await range.range('ABCDE');
    expect(outcome).toMatchObject({ ok: false, code: 'provider_unavailable', retryable: false });
    expect(!outcome.ok && outcome.message).toContain('sluice import passwords');
    await opened.close();
  });
});

function writeLines(file: string, lines: string[]): string {
  fs.writeFileSync(file, lines.join('\n'));
  return file;
}
