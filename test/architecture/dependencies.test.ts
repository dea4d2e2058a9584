import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

// Not test-engine's REPO_ROOT: reading source files must not need the engine to load.
const REPO_ROOT = path.resolve(import.meta.dirname, '../..');

/** Every .ts source file (tests excluded) with the project files it imports. */
function graph(): Map<string, string[]> {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(full);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') && !entry.name.endsWith('.d.ts')) files.push(full);
    }
  };
  walk(path.join(REPO_ROOT, 'src'));
  walk(path.join(REPO_ROOT, 'pipelines'));
  const edges = new Map<string, string[]>();
  for (const file of files) {
    const text = fs.readFileSync(file, 'utf8');
    const targets = [...text.matchAll(/^(?:import|export)(?:[^'"]*?from)?\s*'(\.[^']+)'/gm)].map((m) =>
      path.relative(REPO_ROOT, path.resolve(path.dirname(file), m[1]!.replace(/\.js$/, '.ts'))),
    );
    edges.set(path.relative(REPO_ROOT, file), targets);
  }
  return edges;
}

const layerOf = (file: string) => (file.startsWith('pipelines/') ? 'pipelines' : file.split('/')[1]!);

/** Which layers each layer may import (besides itself). main is the composition root. */
const ALLOWED: Record<string, string[]> = {
  main: ['workflows', 'api', 'cli', 'monitors', 'jobs', 'auth', 'billing', 'lookups', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  api: ['workflows', 'monitors', 'jobs', 'auth', 'billing', 'lookups', 'storage', 'webhooks', 'shared', 'pipelines'],
  cli: ['workflows', 'monitors', 'jobs', 'auth', 'billing', 'lookups', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  monitors: ['jobs', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  jobs: ['auth', 'billing', 'lookups', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  webhooks: ['auth', 'storage', 'shared'],
  workflows: ['jobs', 'lookups', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  auth: ['storage', 'shared'],
  billing: ['storage', 'shared'],
  lookups: ['storage', 'shared'],
  storage: ['shared'],
  config: ['shared'],
  pipelines: ['lookups', 'shared'],
  shared: [],
};

describe('module dependencies', () => {
  const edges = graph();

  it('point one way: main -> api | cli | jobs -> lookups | billing | storage -> shared', () => {
    expect(edges.size).toBeGreaterThan(50);
    expect(edges.get('src/main/cli.ts')).toContain('src/main/open-engine.ts');
    const wrong: string[] = [];
    for (const [file, targets] of edges) {
      for (const target of targets) {
        const from = layerOf(file);
        const to = layerOf(target);
        if (from !== to && !(ALLOWED[from] ?? []).includes(to)) wrong.push(`${file} -> ${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it('have no import cycles between files', () => {
    const state = new Map<string, 'open' | 'done'>();
    const cycles: string[] = [];
    const visit = (file: string, trail: string[]) => {
      if (state.get(file) === 'done') return;
      if (state.get(file) === 'open') {
        cycles.push([...trail.slice(trail.indexOf(file)), file].join(' -> '));
        return;
      }
      state.set(file, 'open');
      for (const next of edges.get(file) ?? []) visit(next, [...trail, file]);
      state.set(file, 'done');
    };
    for (const file of edges.keys()) visit(file, []);
    expect(cycles).toEqual([]);
  });
});

/** The adapters: the only places that may hold a database driver or a transaction. */
const ADAPTER_DIRS = ['src/storage/sqlite/', 'src/storage/postgres/'];

/** better-sqlite3 and node-postgres, with the packages and subpaths that are the same drivers. */
const DRIVER = /^(better-sqlite3|pg|pg-pool|pg-cursor|pg-query-stream|pg-native|sqlite3|node:sqlite)(\/.*)?$/;

/** A statement that opens a transaction by hand, at the start of SQL text or after a `;`. */
const OPENS_TRANSACTION = /(^|;)\s*(BEGIN|START\s+TRANSACTION)\b/i;

/**
 * Where `text` reaches for a database on its own: a driver imported in any form (value, type-only,
 * re-export, `import()`, `require`, an `import('pg').Pool` type), a `.transaction` method, or SQL
 * that runs BEGIN. Comments do not count; code and string literals do.
 */
function databaseReach(fileName: string, text: string): string[] {
  const source = ts.createSourceFile(fileName, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const at = (node: ts.Node, what: string) => found.push(`${fileName}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}: ${what}`);
  const specifier = (node: ts.Node | undefined) => (node && ts.isStringLiteralLike(node) ? node.text : undefined);
  const visit = (node: ts.Node): void => {
    let module: string | undefined;
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) module = specifier(node.moduleSpecifier);
    else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) module = specifier(node.moduleReference.expression);
    else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) module = specifier(node.argument.literal);
    else if (ts.isCallExpression(node) && (node.expression.kind === ts.SyntaxKind.ImportKeyword || (ts.isIdentifier(node.expression) && node.expression.text === 'require'))) {
      module = specifier(node.arguments[0]);
    }
    if (module !== undefined && DRIVER.test(module)) at(node, `imports ${module}`);
    if (ts.isPropertyAccessExpression(node) && node.name.text === 'transaction') at(node.name, 'uses .transaction');
    if (ts.isElementAccessExpression(node) && specifier(node.argumentExpression) === 'transaction') at(node, 'uses .transaction');
    if (ts.isStringLiteralLike(node) || ts.isTemplateHead(node) || ts.isTemplateMiddle(node) || ts.isTemplateTail(node)) {
      const statement = OPENS_TRANSACTION.exec(node.text);
      if (statement) at(node, `runs ${statement[2]!.replace(/\s+/g, ' ')}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

/** Every .ts file under src/ and pipelines/, unit tests beside the code included, outside the adapters. */
function filesOutsideAdapters(): string[] {
  const files: string[] = [];
  const walk = (dir: string) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, entry.name);
      const relative = path.relative(REPO_ROOT, full) + (entry.isDirectory() ? '/' : '');
      if (entry.isDirectory()) {
        if (!ADAPTER_DIRS.includes(relative)) walk(full);
      } else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(relative);
    }
  };
  walk(path.join(REPO_ROOT, 'src'));
  walk(path.join(REPO_ROOT, 'pipelines'));
  return files;
}

describe('the database behind the store port', () => {
  it.each([
    ["import Database from 'better-sqlite3';", 'imports better-sqlite3'],
    ["import type { Database } from 'better-sqlite3';", 'imports better-sqlite3'],
    ["import pg from 'pg';", 'imports pg'],
    ["import { type Pool } from 'pg';", 'imports pg'],
    ["import type { QueryResult } from 'pg';", 'imports pg'],
    ["export type { PoolClient } from 'pg';", 'imports pg'],
    ["import 'pg';", 'imports pg'],
    ["import Pool from 'pg-pool';", 'imports pg-pool'],
    ["const pg = await import('pg');", 'imports pg'],
    ["import pg = require('pg');", 'imports pg'],
    ["const Database = require('better-sqlite3');", 'imports better-sqlite3'],
    ["let client: import('pg').PoolClient;", 'imports pg'],
    ['db.transaction(() => run()).immediate();', 'uses .transaction'],
    ['await store.db.transaction(async (tx) => tx.query(sql));', 'uses .transaction'],
    ["db['transaction'](() => run());", 'uses .transaction'],
    ["db.exec('BEGIN IMMEDIATE');", 'runs BEGIN'],
    ["await client.query('begin');", 'runs begin'],
    ['await client.query(`START TRANSACTION ISOLATION LEVEL ${level}`);', 'runs START TRANSACTION'],
    ["db.exec('SAVEPOINT a; BEGIN');", 'runs BEGIN'],
  ])('%s is found', (code, what) => {
    expect(databaseReach('probe.ts', code)).toEqual([`probe.ts:1: ${what}`]);
  });

  it.each([
    "import { openStore } from '../storage/open-store.js';",
    "import pgFormat from 'pg-format-like';",
    "import { Pgp } from './pg';",
    '// the adapter opens its transaction with BEGIN IMMEDIATE',
    '/** SQLite runs `BEGIN IMMEDIATE` here. */ const x = 1;',
    'await jobs.transition(id, "paused", { now });',
    "log.info('the job will begin once a worker is free');",
  ])('%s is not', (code) => {
    expect(databaseReach('probe.ts', code)).toEqual([]);
  });

  it('is reached only by the adapters: no file under src/ or pipelines/ outside them imports a driver, uses .transaction or runs BEGIN', () => {
    const files = filesOutsideAdapters();
    expect(files).toContain('src/storage/store.ts');
    expect(files).toContain('src/jobs/process-batch.ts');
    expect(files.some((f) => ADAPTER_DIRS.some((dir) => f.startsWith(dir)))).toBe(false);
    const offenders = files.flatMap((file) => databaseReach(file, fs.readFileSync(path.join(REPO_ROOT, file), 'utf8')));
    expect(offenders).toEqual([]);
  });
});
