import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVitest, type Vitest } from 'vitest/node';
import { UNIT_TESTS } from '../tiers.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.sluice', 'sluice-results']);

/** Every `*.test.ts` under the repository, found by walking it rather than by the config's own globs. */
function testFilesOnDisk(dir = ROOT): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return SKIP_DIRS.has(entry.name) ? [] : testFilesOnDisk(path.join(dir, entry.name));
    return entry.name.endsWith('.test.ts') ? [path.relative(ROOT, path.join(dir, entry.name))] : [];
  });
}

/**
 * What a unit-tier file must not reach for, directly (its own source). A helper that starts
 * processes is named here so that using it is caught too.
 */
const NOT_IN_UNIT = [
  { pattern: /from ['"](node:)?child_process['"]/, why: 'starts a child process' },
  { pattern: /support\/(cli-process|child-worker|api-serve)\.js/, why: 'starts sluice processes' },
  { pattern: /support\/chromium\.js/, why: 'starts a browser' },
  { pattern: /\bCLI\b|\bdist\/(src|bench|fixtures)\b/, why: 'runs the build output' },
  { pattern: /\b(TEST_STORES|openTestStore|openStoreHarness|storeEnv|freshDatabase|migratedDatabase|poolScope|postgresServerUrl)\b/, why: 'uses PostgreSQL' },
  { pattern: /STORE_KINDS\.postgres/, why: 'uses PostgreSQL' },
];

describe('test tiers (test/tiers.ts, vitest.config.ts)', () => {
  let vitest: Vitest;
  const byProject = new Map<string, string[]>();
  beforeAll(async () => {
    // vitest's own resolution of the config: what `npm test` would really run.
    vitest = await createVitest('test', { config: path.join(ROOT, 'vitest.config.ts'), root: ROOT, watch: false }, {}, {});
    for (const project of vitest.projects) {
      const { testFiles } = await project.globTestFiles();
      byProject.set(project.name, testFiles.map((f) => path.relative(ROOT, f)).sort());
    }
  });
  afterAll(async () => {
    await vitest?.close();
  });

  it('has the two projects, unit and full', () => {
    expect([...byProject.keys()].sort()).toEqual(['full', 'unit']);
  });

  it('puts every test file in exactly one project, so npm test runs each once', () => {
    const onDisk = testFilesOnDisk().sort();
    const placed = [...byProject.values()].flat().sort();
    expect(placed).toEqual(onDisk);
  });

  it('names in the unit list only files that exist (a renamed file must not drop out silently)', () => {
    const unit = new Set(byProject.get('unit'));
    const missing = UNIT_TESTS.filter((entry) => !entry.includes('*') && !unit.has(entry));
    expect(missing).toEqual([]);
  });

  it('keeps out of the unit tier files that start processes, run the build or use PostgreSQL', () => {
    // This file names the patterns it looks for, so it is the one file not read for them.
    const offences = byProject.get('unit')!.filter((file) => file !== 'test/architecture/test-tiers.test.ts').flatMap((file) => {
      const source = fs.readFileSync(path.join(ROOT, file), 'utf8');
      return NOT_IN_UNIT.filter(({ pattern }) => pattern.test(source)).map(({ why }) => `${file} ${why}`);
    });
    expect(offences).toEqual([]);
  });

  it('finds a unit tier of real size', () => {
    expect(byProject.get('unit')!.length).toBeGreaterThan(30);
  });
});
