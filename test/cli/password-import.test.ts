import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { LocalPasswordRange } from '../../src/lookups/password/local-password-range.js';
import { INDEX_DIR, INDEX_POINTER, RECORDS_AT } from '../../src/lookups/password/password-range-format.js';
import { ProcessRecords } from '../../src/shared/shared-records.js';
import { cliEnv, killChildren, parseJson, removeScratchDirs, runCli, scratchDir, spawnCli } from '../support/cli-process.js';
import { generatedHashes, writeCombined } from '../support/password-hashes.js';

afterEach(async () => {
  await killChildren();
  removeScratchDirs();
});

/** `n` hashes in ascending order without hashing anything: the prefix climbs, the suffix is the line number. */
function writeSequential(file: string, n: number): void {
  const out = fs.openSync(file, 'w');
  let lines: string[] = [];
  for (let i = 0; i < n; i++) {
    const prefix = Math.floor((i * 2 ** 20) / n).toString(16).toUpperCase().padStart(5, '0');
    lines.push(`${prefix}${i.toString(16).toUpperCase().padStart(35, '0')}:${1 + (i % 97)}\r\n`);
    if (lines.length === 50_000) {
      fs.writeSync(out, lines.join(''));
      lines = [];
    }
  }
  fs.writeSync(out, lines.join(''));
  fs.closeSync(out);
}

function pointer(dataDir: string): { file: string; records: number } {
  const db = new Database(path.join(dataDir, 'sluice.db'), { readonly: true });
  try {
    return JSON.parse((db.prepare('SELECT value FROM shared_records WHERE name = ?').get(INDEX_POINTER) as { value: string }).value);
  } finally {
    db.close();
  }
}

describe('sluice import passwords (the built CLI; a real process, because the test kills it)', () => {
  it('killed with SIGKILL mid-import, leaves the previous index in use; run again, imports every line once', async () => {
    const root = scratchDir('sluice-passwords-cli-');
    const dataDir = path.join(root, 'data');
    const env = cliEnv(dataDir);
    const first = generatedHashes(1_000, 'cli');
    const small = await runCli(['import', 'passwords', writeCombined(path.join(root, 'small.txt'), first), '--json'], env);
    expect(small.code, small.stderr).toBe(0);
    const v1 = parseJson(small);
    expect(v1).toMatchObject({ lines: 1_000, imported: 1_000, invalid: 0 });

    const big = path.join(root, 'big.txt');
    writeSequential(big, 1_000_000);
    const child = spawnCli(['import', 'passwords', big, '--json'], env);
    const dir = path.join(dataDir, INDEX_DIR);
    // Killed once records are being written: the temporary file has grown past its table.
    for (const deadline = Date.now() + 60_000; ; ) {
      const tmp = fs.readdirSync(dir).find((f) => f.endsWith('.tmp'));
      if (tmp !== undefined && (fs.statSync(path.join(dir, tmp), { throwIfNoEntry: false })?.size ?? 0) > RECORDS_AT + 1_000_000) break;
      if (child.child.exitCode !== null) throw new Error(`the import ended before it could be killed: ${child.stderr()}`);
      if (Date.now() > deadline) throw new Error('no temporary file grew');
      await new Promise((r) => setTimeout(r, 5));
    }
    child.child.kill('SIGKILL');
    await new Promise((r) => child.child.once('exit', r));

    expect(pointer(dataDir)).toMatchObject({ file: v1.index_file, records: 1_000 });
    const names = fs.readdirSync(dir);
    expect(names).toContain(v1.index_file);
    expect(names.some((f) => f.endsWith('.tmp'))).toBe(true);
    const records = new ProcessRecords();
    await records.updateShared(INDEX_POINTER, () => ({ value: JSON.stringify(pointer(dataDir)), result: undefined }));
    const range = new LocalPasswordRange({ dataDir, records, now: () => 0 });
    const probe = first[500]!;
    expect(await range.range(probe.hash.slice(0, 5))).toMatchObject({ ok: true, rows: expect.arrayContaining([{ suffix: probe.hash.slice(5), count: probe.count }]) });
    await range.close();

    const again = await runCli(['import', 'passwords', big, '--json'], env, 120_000);
    expect(again.code, again.stderr).toBe(0);
    expect(parseJson(again)).toMatchObject({ lines: 1_000_000, imported: 1_000_000, duplicates: 0, invalid: 0 });
    expect(pointer(dataDir).records).toBe(1_000_000);
    expect(fs.readdirSync(dir)).toEqual([parseJson(again).index_file]);
    expect(fs.statSync(path.join(dir, parseJson(again).index_file)).size).toBe(RECORDS_AT + 1_000_000 * 22);
  }, 180_000);

  it('a bad argument is one line naming its code', async () => {
    const root = scratchDir('sluice-passwords-cli-');
    const result = await runCli(['import', 'passwords', path.join(root, 'missing.txt')], cliEnv(path.join(root, 'data')));
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('(bad_argument)');
    expect(result.stderr).not.toMatch(/^\s+at /m);
  });
});
