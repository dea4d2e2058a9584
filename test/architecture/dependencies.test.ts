import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/test-engine.js';

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
  main: ['api', 'cli', 'jobs', 'auth', 'billing', 'lookups', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  api: ['jobs', 'auth', 'billing', 'lookups', 'storage', 'webhooks', 'shared', 'pipelines'],
  cli: ['jobs', 'auth', 'billing', 'lookups', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  jobs: ['auth', 'billing', 'lookups', 'storage', 'webhooks', 'config', 'shared', 'pipelines'],
  webhooks: ['auth', 'storage', 'shared'],
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
