import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeHarnesses, json, openApiHarness } from '../support/api-harness.js';

/**
 * The document as outside tools read it, linted in-process (no network, no extra process) with
 * the rulesets the issue names: Spectral `spectral:oas` at 0 warnings, Redocly `recommended` at 0
 * errors. Run against what GET /api/openapi.json serves, not a copy.
 */
const require = createRequire(import.meta.url);
const { Spectral, Document } = require('@stoplight/spectral-core') as typeof import('@stoplight/spectral-core');
const Parsers = require('@stoplight/spectral-parsers') as typeof import('@stoplight/spectral-parsers');
const { oas } = require('@stoplight/spectral-rulesets') as typeof import('@stoplight/spectral-rulesets');
const redocly = require('@redocly/openapi-core') as typeof import('@redocly/openapi-core');

const METHODS = ['get', 'put', 'post', 'delete', 'patch'];
let text: string;

beforeAll(async () => {
  const h = await openApiHarness();
  const response = await h.app.inject({ method: 'GET', url: '/api/openapi.json' });
  expect(response.statusCode).toBe(200);
  text = JSON.stringify(json(response), null, 2);
});

afterAll(closeHarnesses);

describe('the OpenAPI document, as outside tools read it', () => {
  it('names every operation: operationId, summary, description and declared tags (a route added without them is named here)', () => {
    const doc = JSON.parse(text);
    const declared = new Set((doc.tags ?? []).map((t: { name: string }) => t.name));
    const problems: string[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const method of METHODS) {
        const op = item[method];
        if (!op) continue;
        const where = `${method.toUpperCase()} ${path}`;
        for (const field of ['operationId', 'summary', 'description']) if (!op[field]) problems.push(`${where}: no ${field}`);
        if (!op.tags?.length) problems.push(`${where}: no tags`);
        for (const tag of op.tags ?? []) if (!declared.has(tag)) problems.push(`${where}: tag ${tag} is not declared with a description at the top level`);
        if (!Object.keys(op.responses ?? {}).some((s) => s.startsWith('2') || s.startsWith('3'))) problems.push(`${where}: no success response`);
      }
    }
    expect(problems, 'add them in the route schema or src/api/openapi/operation-catalog.ts').toEqual([]);
  });

  it('passes Spectral spectral:oas with no warning and no error', async () => {
    const spectral = new Spectral();
    spectral.setRuleset({ extends: [[oas as never, 'recommended']] });
    const results = await spectral.run(new Document(text, Parsers.Json, '/openapi.json'));
    expect(results.map((r) => `${r.code} at ${r.path.join('.')}: ${r.message}`)).toEqual([]);
  });

  it('passes Redocly recommended with no error', async () => {
    const config = await redocly.createConfig({ extends: ['recommended'] });
    const problems = await redocly.lintFromString({ source: text, absoluteRef: '/openapi.json', config });
    const errors = problems.filter((p) => p.severity === 'error');
    expect(errors.map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)).toEqual([]);
    // No warning either: even healthz and readyz answer 400 to a NUL in the query (src/api/input-guards.ts).
    const warnings = problems.filter((p) => p.severity === 'warn').map((p) => `${p.ruleId} at ${p.location[0]?.pointer}`);
    expect(warnings).toEqual([]);
  });

  it('documents the headers and media types callers meet: rate limits, Retry-After, Idempotency-Key, Location, text/csv', () => {
    const doc = JSON.parse(text);
    const account = doc.paths['/api/account'].get.responses;
    expect(Object.keys(account['200'].headers)).toEqual(expect.arrayContaining(['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset']));
    expect(Object.keys(account['429'].headers)).toContain('Retry-After');
    expect(doc.paths['/api/jobs/bulk'].post.parameters.map((p: { name: string }) => p.name)).toContain('Idempotency-Key');
    expect(Object.keys(doc.paths['/api/jobs/{id}/download'].get.responses['302'].headers)).toContain('Location');
    expect(Object.keys(doc.paths['/api/jobs/{id}/download'].get.responses['200'].content)).toEqual(expect.arrayContaining(['application/json', 'text/csv']));
    expect(doc.servers.length).toBeGreaterThan(0);
    expect(doc.info.contact).toBeDefined();
    expect(doc.info.license.name).toBe('MIT');
  });
});
