import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeHarnesses, json, openApiHarness, type ApiHarness } from '../support/api-harness.js';

/**
 * GET /api/openapi.json: a structurally valid OpenAPI 3 document that names every route the app
 * serves (no validator package is installed, so the structure is checked here by hand, and every
 * embedded JSON Schema against the 2020-12 meta-schema with the ajv that Fastify already ships).
 */

/** The operations the issue asks for: what the document must describe, no more and no less. */
const OPERATIONS = [
  'GET /healthz',
  'GET /readyz',
  'POST /api/auth/login',
  'POST /api/auth/logout',
  'POST /api/keys',
  'GET /api/account/audit',
  'GET /api/account/usage',
  'POST /api/account/keys',
  'GET /api/account/keys',
  'PATCH /api/account/keys',
  'GET /api/account/keys/reveal',
  'POST /api/account/keys/roll',
  'POST /api/jobs/bulk',
  'GET /api/jobs',
  'GET /api/jobs/{id}',
  'DELETE /api/jobs/{id}',
  'GET /api/jobs/{id}/download',
  'POST /api/jobs/{id}/cancel',
  'POST /api/jobs/{id}/retry-failed',
  'POST /api/jobs/{id}/resume',
  'GET /api/account',
  'GET /api/account/credit-alert',
  'PUT /api/account/credit-alert',
  'POST /api/email/gender',
  'POST /api/lookup/email/gender',
  'POST /api/lookup/email/breaches',
  'POST /api/lookup/email/password/breaches',
  'GET /api/range/{prefix}',
  'POST /api/lookup/breaches/exposed-keys',
  'POST /api/lookup/breaches/github',
  'GET /api/lookup/breaches/github/{id}',
  'POST /api/lookup/email/validity',
  'POST /api/email/validity/enrich',
  'POST /api/lookup/email/compliance',
  'POST /api/webhooks',
  'GET /api/webhooks',
  'PUT /api/webhooks',
  'DELETE /api/webhooks',
  'GET /api/webhooks/{id}',
  'DELETE /api/webhooks/{id}',
  'POST /api/webhooks/test',
  'POST /api/webhooks/{id}/rotate-secret',
  'GET /api/webhooks/deliveries',
  'POST /api/webhooks/deliveries/{id}/redeliver',
  'POST /api/agent/phone-breaches',
  'POST /api/phone-jobs',
  'GET /api/phone-jobs',
  'POST /api/phone-jobs/resume',
  'POST /api/agent/company',
  'POST /api/bulk-company-search',
  'POST /api/agent/ip-network',
  'POST /api/bulk-ip-search',
  'POST /api/agent/domain',
  'POST /api/bulk-domain-search',
  'POST /api/monitors',
  'GET /api/monitors',
  'GET /api/monitors/{id}',
  'PATCH /api/monitors/{id}',
  'DELETE /api/monitors/{id}',
  'POST /api/monitors/{id}/pause',
  'POST /api/monitors/{id}/resume',
  'GET /api/monitors/{id}/targets',
  'POST /api/monitors/{id}/targets',
  'DELETE /api/monitors/{id}/targets',
  'POST /api/agent/monitors/{id}/run',
  'GET /api/monitoring/targets',
  'GET /api/monitors/{id}/runs/{runId}/results',
  'GET /api/monitors/{id}/runs/{runId}/results/download',
  'GET /api/agent/monitors/{id}/runs',
  'GET /api/agent/monitors/{id}/runs/{runId}/results',
  'GET /api/agent/monitoring/runs',
  'GET /api/agent/monitoring/results',
  'POST /api/lists',
  'GET /api/lists',
  'GET /api/lists/{id}',
  'GET /api/lists/{id}/targets',
  'DELETE /api/lists/{id}',
  'POST /api/workflows',
  'GET /api/workflows',
  'GET /api/workflows/{id}',
  'PUT /api/workflows/{id}',
  'DELETE /api/workflows/{id}',
  'POST /api/workflows/{id}/run',
  'GET /api/workflows/runs',
  'GET /api/workflow-runs/{runId}',
  'POST /api/workflow-runs/{runId}/cancel',
  'POST /api/workflow-runs/{runId}/redrive',
  'POST /api/workflow-runs/{runId}/rerun',
  'GET /api/workflow-templates',
  'POST /api/workflow-templates/{templateId}/clone',
  'PUT /api/workflow-secrets/{name}',
  'GET /api/workflow-secrets',
  'DELETE /api/workflow-secrets/{name}',
  'GET /api/workflows/logs',
  'POST /api/workflows/{id}/ingest-token',
  'DELETE /api/workflows/{id}/ingest-token',
  'POST /api/ingest/workflows/{token}',
].sort();

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const PATH_ITEM_KEYS = new Set([...HTTP_METHODS, '$ref', 'summary', 'description', 'servers', 'parameters']);

/** The dashboard's page and files: served by the app, but no API, so not in the document. */
const DASHBOARD_PATHS = ['/', '/dashboard/dashboard.css', '/dashboard/dashboard.js', '/dashboard/job-reasons.js', '/dashboard/monitors.js', '/dashboard/lists.js', '/dashboard/csv-columns.js', '/dashboard/dom.js', '/favicon.svg'];
/** Prometheus's scrape target: an operator's endpoint, not the API's, so not in the document. */
const OPERATOR_PATHS = ['/metrics'];

let h: ApiHarness;
let doc: any;

beforeAll(async () => {
  h = await openApiHarness();
  const response = await h.app.inject({ method: 'GET', url: '/api/openapi.json' });
  expect(response.statusCode).toBe(200);
  expect(response.headers['content-type']).toMatch(/^application\/json/);
  doc = json(response);
});

afterAll(closeHarnesses);

/** Full paths of every route Fastify registered, read from its route tree (`:id` becomes `{id}`). */
function registeredPaths(tree: string): string[] {
  const stack: string[] = [];
  const paths = new Set<string>();
  for (const line of tree.split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    stack.length = depth;
    stack.push(match[2]!);
    paths.add(stack.join(''));
  }
  return [...paths].map((p) => p.replace(/:(\w+)/g, '{$1}'));
}

function operations(document: any): { key: string; path: string; method: string; op: any }[] {
  const out: { key: string; path: string; method: string; op: any }[] = [];
  for (const [path, item] of Object.entries<any>(document.paths)) {
    for (const method of HTTP_METHODS) {
      if (item[method]) out.push({ key: `${method.toUpperCase()} ${path}`, path, method, op: item[method] });
    }
  }
  return out;
}

describe('GET /api/openapi.json', () => {
  it('is an OpenAPI 3 document with info and paths', () => {
    expect(doc.openapi).toMatch(/^3\.[01]\.\d+$/);
    expect(typeof doc.info?.title).toBe('string');
    expect(doc.info.title.length).toBeGreaterThan(0);
    expect(typeof doc.info.version).toBe('string');
    expect(typeof doc.paths).toBe('object');
    for (const path of Object.keys(doc.paths)) expect(path.startsWith('/')).toBe(true);
  });

  it('documents exactly the operations the API serves', () => {
    expect(operations(doc).map((o) => o.key).sort()).toEqual(OPERATIONS);
  });

  it('names every route path the app registered (the document itself aside)', () => {
    const registered = registeredPaths(h.app.printRoutes({ commonPrefix: false })).filter((p) => p !== '/api/openapi.json' && !DASHBOARD_PATHS.includes(p) && !OPERATOR_PATHS.includes(p));
    expect(registered.sort()).toEqual([...new Set(OPERATIONS.map((op) => op.split(' ')[1]!))].sort());
    for (const path of registered) expect(Object.keys(doc.paths), `route ${path} is not documented`).toContain(path);
  });

  it('has well-formed path items, operations, parameters, responses and security', () => {
    const schemes = Object.keys(doc.components?.securitySchemes ?? {});
    const checkSecurity = (security: unknown) => {
      expect(Array.isArray(security)).toBe(true);
      for (const requirement of security as Record<string, unknown>[]) {
        for (const [name, scopes] of Object.entries(requirement)) {
          expect(schemes, `unknown security scheme ${name}`).toContain(name);
          expect(Array.isArray(scopes)).toBe(true);
        }
      }
    };
    if (doc.security !== undefined) checkSecurity(doc.security);
    for (const [name, scheme] of Object.entries<any>(doc.components?.securitySchemes ?? {})) {
      expect(['apiKey', 'http', 'mutualTLS', 'oauth2', 'openIdConnect'], name).toContain(scheme.type);
      if (scheme.type === 'http') expect(typeof scheme.scheme).toBe('string');
    }

    const operationIds = new Set<string>();
    for (const [path, item] of Object.entries<any>(doc.paths)) {
      for (const key of Object.keys(item)) expect(PATH_ITEM_KEYS, `${path}: unexpected key ${key}`).toContain(key);
    }
    for (const { key, path, op } of operations(doc)) {
      if (op.operationId !== undefined) {
        expect(operationIds.has(op.operationId), `${key}: duplicate operationId`).toBe(false);
        operationIds.add(op.operationId);
      }
      if (op.tags !== undefined) expect(op.tags.every((t: unknown) => typeof t === 'string')).toBe(true);
      if (op.security !== undefined) checkSecurity(op.security);

      const templated = [...path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
      const params: any[] = op.parameters ?? [];
      const seen = new Set<string>();
      for (const p of params) {
        expect(typeof p.name, key).toBe('string');
        expect(['query', 'header', 'path', 'cookie'], key).toContain(p.in);
        expect(seen.has(`${p.in}:${p.name}`), `${key}: duplicate parameter ${p.name}`).toBe(false);
        seen.add(`${p.in}:${p.name}`);
        expect(p.schema !== undefined || p.content !== undefined, `${key}: parameter ${p.name} has no schema`).toBe(true);
        if (p.in === 'path') {
          expect(p.required, `${key}: path parameter ${p.name} must be required`).toBe(true);
          expect(templated, `${key}: path parameter ${p.name} is not in the path`).toContain(p.name);
        }
      }
      for (const name of templated) expect(params.some((p) => p.in === 'path' && p.name === name), `${key}: {${name}} undocumented`).toBe(true);

      if (op.requestBody !== undefined) {
        expect(typeof op.requestBody.content, key).toBe('object');
        expect(Object.keys(op.requestBody.content).length, key).toBeGreaterThan(0);
      }
      expect(typeof op.responses, `${key}: responses`).toBe('object');
      expect(Object.keys(op.responses).length, `${key}: responses`).toBeGreaterThan(0);
      for (const [status, response] of Object.entries<any>(op.responses)) {
        expect(status, key).toMatch(/^(default|[1-5](\d\d|XX))$/);
        expect(typeof response.description, `${key} ${status}: description`).toBe('string');
      }
    }
  });

  it('embeds only valid JSON Schemas (2020-12 meta-schema)', () => {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    const schemas: [string, unknown][] = [];
    for (const { key, op } of operations(doc)) {
      for (const p of op.parameters ?? []) if (p.schema) schemas.push([`${key} parameter ${p.name}`, p.schema]);
      for (const [type, media] of Object.entries<any>(op.requestBody?.content ?? {})) if (media.schema) schemas.push([`${key} body ${type}`, media.schema]);
      for (const [status, response] of Object.entries<any>(op.responses)) {
        for (const [type, media] of Object.entries<any>(response.content ?? {})) if (media.schema) schemas.push([`${key} ${status} ${type}`, media.schema]);
      }
    }
    expect(schemas.length).toBeGreaterThan(0);
    for (const [where, schema] of schemas) {
      const ok = ajv.validateSchema(schema as object);
      expect(ok, `${where}: ${ajv.errorsText(ajv.errors)}`).toBe(true);
    }
  });

  it('describes the documented query parameters of the job list as they behave (limit 1..100 default 20, offset, status)', () => {
    const params: any[] = doc.paths['/api/jobs'].get.parameters;
    expect(params.find((p) => p.name === 'limit').schema).toMatchObject({ type: 'integer', minimum: 1, maximum: 100, default: 20 });
    expect(params.find((p) => p.name === 'offset').schema).toMatchObject({ type: 'integer', minimum: 0, default: 0 });
    expect(params.find((p) => p.name === 'status').schema.enum).toEqual(expect.arrayContaining(['queued', 'running', 'completed', 'failed', 'cancelled']));
  });
});

describe('what the document says matches what the routes do', () => {
  it('documents the success status each route really answers with (202 for bulk, 302 for download)', () => {
    expect(Object.keys(doc.paths['/api/jobs/bulk'].post.responses)).toContain('202');
    expect(Object.keys(doc.paths['/api/jobs/{id}/download'].get.responses)).toContain('302');
    expect(Object.keys(doc.paths['/api/jobs/{id}'].delete.responses)).toEqual(expect.arrayContaining(['200', '404', '409']));
  });

  it('documents the multipart body of POST /api/jobs/bulk (type, download_link, column, file)', () => {
    const content = doc.paths['/api/jobs/bulk'].post.requestBody?.content ?? {};
    const form = content['multipart/form-data']?.schema;
    expect(form, 'no multipart/form-data request body').toBeDefined();
    expect(Object.keys(form.properties ?? {})).toEqual(expect.arrayContaining(['type', 'download_link', 'file']));
    expect(form.required ?? []).toEqual(expect.arrayContaining(['file']));
    // `type` (one lookup or several joined by commas) or one `lookup` field per lookup.
    expect(form.anyOf).toEqual([{ required: ['type'] }, { required: ['lookup'] }]);
    expect(new RegExp(form.properties.type.pattern).test('gender,email_breaches')).toBe(true);
    expect(new RegExp(form.properties.type.pattern).test('gender,horoscope')).toBe(false);
  });

  it('documents both bodies of POST /api/lists (JSON targets, or a CSV form) and the monitor shapes', () => {
    const content = doc.paths['/api/lists'].post.requestBody?.content ?? {};
    expect(Object.keys(content['application/json']?.schema?.properties ?? {})).toEqual(expect.arrayContaining(['name', 'type', 'targets']));
    expect(Object.keys(content['multipart/form-data']?.schema?.properties ?? {})).toEqual(expect.arrayContaining(['name', 'type', 'file']));
    const created = doc.paths['/api/monitors'].post.responses['201'].content['application/json'].schema;
    expect(Object.keys(created.properties)).toEqual(expect.arrayContaining(['frequency', 'tracked_fields', 'change_detection', 'next_run_at', 'credits_per_run', 'billing']));
    expect(Object.keys(doc.paths['/api/agent/monitors/{id}/run'].post.responses)).toContain('202');
  });

  it("documents spec 4.8's run and result shapes: the bare array, the paged results and runs, the snapshot's fields", () => {
    const schemaOf = (path: string, status = '200') => doc.paths[path].get.responses[status].content['application/json'].schema;
    const bare = schemaOf('/api/monitors/{id}/runs/{runId}/results');
    expect(bare.type).toBe('array');
    expect(Object.keys(bare.items.properties)).toEqual(expect.arrayContaining(['email', 'target', 'data', 'changes', 'has_changes']));
    expect(doc.paths['/api/monitors/{id}/runs/{runId}/results'].get.parameters.map((p: { name: string }) => p.name)).toContain('changes_only');
    for (const path of ['/api/agent/monitors/{id}/runs/{runId}/results', '/api/agent/monitoring/results']) {
      expect(Object.keys(schemaOf(path).properties), path).toEqual(expect.arrayContaining(['results', 'total', 'limit', 'offset']));
    }
    for (const path of ['/api/agent/monitors/{id}/runs', '/api/agent/monitoring/runs']) {
      const runs = schemaOf(path);
      expect(Object.keys(runs.properties), path).toEqual(expect.arrayContaining(['runs', 'total']));
      expect(Object.keys(runs.properties.runs.items.properties.stats.properties)).toEqual(['total_records', 'changes_detected', 'credits_used', 'duration_ms']);
    }
    expect(doc.paths['/api/agent/monitoring/results'].get.parameters.map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['limit', 'offset', 'type', 'changes_only']));
  });

  it('marks the routes that take no API key as public (healthz, readyz, login)', () => {
    for (const [path, method] of [['/healthz', 'get'], ['/readyz', 'get'], ['/api/auth/login', 'post']] as const) {
      expect(doc.paths[path][method].security, `${method.toUpperCase()} ${path}`).toEqual([]);
    }
  });
});
