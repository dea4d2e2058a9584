import { familyOf, ROUTE_FAMILIES } from '../errors.js';
import { ERROR_SCHEMAS, errorSchemaName, STATUS_MEANINGS } from './error-shapes.js';
import { OPERATION_CATALOG, TAGS, type OperationEntry } from './operation-catalog.js';
import { SCHEMAS } from './schemas.js';

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/* eslint-disable @typescript-eslint/no-explicit-any -- the document is plain JSON built by @fastify/swagger */
type Doc = Record<string, any>;

const RATE_HEADERS = {
  'X-RateLimit-Limit': { $ref: '#/components/headers/X-RateLimit-Limit' },
  'X-RateLimit-Remaining': { $ref: '#/components/headers/X-RateLimit-Remaining' },
  'X-RateLimit-Reset': { $ref: '#/components/headers/X-RateLimit-Reset' },
};
const HEADERS = {
  'X-RateLimit-Limit': { description: 'Requests per rolling minute, shared by all keys of the account', schema: { type: 'integer' } },
  'X-RateLimit-Remaining': { description: 'Requests left in the current window, this one counted', schema: { type: 'integer' } },
  'X-RateLimit-Reset': { description: 'Unix seconds when a request slot frees up', schema: { type: 'integer' } },
  'Retry-After': { description: 'Seconds to wait before trying again', schema: { type: 'integer' } },
  Location: { description: 'Where the resource is: a presigned URL, valid for a limited time', schema: { type: 'string', format: 'uri' } },
};

/** What a 400 means on a GET, which has no body to be malformed. */
const GUARDED_400 = 'invalid_request: a NUL character in the path or query, or an offset or limit beyond 2^53 - 1';

/**
 * Completes what @fastify/swagger made of the route declarations into the document outside tools
 * expect (Spectral `spectral:oas`, Redocly `recommended`, Prism): ids, summaries, declared tags,
 * the bodies routes read by hand, every status with its body, and the headers. It fills gaps only:
 * what a route declares itself stays as it is. An operation the catalog does not know is left
 * as it is, for the lint test and the harness's response check to name.
 */
export function completeDocument(doc: Doc, catalog: Record<string, OperationEntry> = OPERATION_CATALOG): Doc {
  doc.info = {
    ...doc.info,
    contact: doc.info?.contact ?? { name: 'Sluice operators', url: 'https://github.com/sluice/sluice' },
    license: doc.info?.license ?? { name: 'MIT', identifier: 'MIT' },
  };
  if (!Array.isArray(doc.servers) || doc.servers.length === 0) {
    doc.servers = [
      {
        url: '{scheme}://{host}',
        description: 'The Sluice server that serves this document (`sluice serve`)',
        variables: { scheme: { default: 'http', enum: ['http', 'https'] }, host: { default: 'localhost:8080', description: 'Host and port of `sluice serve`' } },
      },
    ];
  }
  const declared = new Set((doc.tags ?? []).map((t: { name: string }) => t.name));
  doc.tags = [...(doc.tags ?? []), ...TAGS.filter((t) => !declared.has(t.name))];
  doc.components = doc.components ?? {};
  doc.components.schemas = { ...ERROR_SCHEMAS, ...SCHEMAS, ...doc.components.schemas };
  doc.components.headers = { ...HEADERS, ...doc.components.headers };

  const globalSecurity = doc.security ?? [];
  for (const [path, item] of Object.entries<Doc>(doc.paths ?? {})) {
    for (const method of METHODS) {
      const op = item[method];
      if (!op) continue;
      const entry = catalog[`${method.toUpperCase()} ${path}`];
      if (!entry) continue;
      const secured = (op.security ?? globalSecurity).length > 0;
      completeOperation(path, method, op, entry, secured);
    }
  }
  return doc;
}

function completeOperation(path: string, method: string, op: Doc, entry: OperationEntry, secured: boolean): void {
  op.operationId ??= entry.operationId;
  op.summary ??= entry.summary;
  op.description ??= entry.description;
  if (op.description === undefined) delete op.description;
  if (entry.requestBody && op.requestBody === undefined) op.requestBody = entry.requestBody;
  for (const header of entry.headers ?? []) {
    op.parameters = op.parameters ?? [];
    if (!op.parameters.some((p: Doc) => p.in === 'header' && p.name === header.name)) op.parameters.push({ in: 'header', required: false, ...header });
  }

  const responses: Doc = op.responses ?? {};
  // @fastify/swagger writes a bodiless "Default Response" 200 for a route without response
  // schemas: a route that answers 202, or a body, says so in the catalog instead.
  if (entry.ok && responses['200']?.description === 'Default Response' && responses['200'].content === undefined) delete responses['200'];
  for (const [status, mediaType] of Object.entries(entry.mediaTypes ?? {})) {
    const content = responses[status]?.content;
    if (content?.['application/json']) {
      content[mediaType] = content['application/json'];
      delete content['application/json'];
    }
  }
  for (const [status, response] of Object.entries(entry.ok ?? {})) {
    const current = responses[status];
    if (current?.content === undefined || isLooseObject(current.content['application/json']?.schema)) responses[status] = { ...response };
    // A route's own schema covers its JSON answer; the catalog adds what else it sends (a CSV, headers).
    else responses[status] = { ...current, content: { ...response.content, ...current.content }, headers: { ...response.headers, ...current.headers } };
  }

  const family = familyOf(path);
  const hasParams = (op.parameters ?? []).some((p: Doc) => p.in === 'query' || p.in === 'path');
  const statuses = new Set<number>([500, 503]);
  if (secured) [401, 429].forEach((s) => statuses.add(s));
  // Fastify reads a JSON body on any route that may have one, declared or not: too large is 413, malformed 400.
  if (method !== 'get') [400, 413].forEach((s) => statuses.add(s));
  // The input guards (src/api/input-guards.ts) run before every route: a NUL character in the path or
  // query, or an offset or limit past MAX_PAGE_NUMBER, is 400 on any operation, GET included.
  statuses.add(400);
  if (op.requestBody !== undefined) {
    // The gender routes answer every request-shape problem with 400 (spec 4.3).
    if (family !== ROUTE_FAMILIES.gender) [415, 422].forEach((s) => statuses.add(s));
  }
  if (hasParams && family !== ROUTE_FAMILIES.gender) statuses.add(422);
  if ((op.parameters ?? []).some((p: Doc) => p.in === 'path')) statuses.add(404);
  for (const status of Object.keys(entry.errors ?? {})) statuses.add(Number(status));

  for (const status of [...statuses].sort()) {
    const key = String(status);
    const current = responses[key];
    const bodyless = current?.content === undefined || isLooseObject(current.content['application/json']?.schema);
    if (current !== undefined && !bodyless) continue;
    responses[key] = {
      description: current?.description ?? entry.errors?.[status] ?? (method === 'get' && status === 400 ? GUARDED_400 : STATUS_MEANINGS[status]) ?? 'Error',
      content: { 'application/json': { schema: { $ref: `#/components/schemas/${errorSchemaName(path, status)}` } } },
    };
  }

  // sendError answers every 401 of the agent family `{c, m}`, whatever a route's own (open) 401 schema says.
  if (family === ROUTE_FAMILIES.agent && responses['401'] !== undefined) {
    responses['401'] = { ...responses['401'], content: { 'application/json': { schema: { $ref: '#/components/schemas/AgentUnauthorized' } } } };
  }

  for (const [status, response] of Object.entries<Doc>(responses)) {
    const code = Number(status);
    if (secured && code !== 401) response.headers = { ...RATE_HEADERS, ...response.headers };
    if (code === 429 || (code === 503 && path === '/api/auth/login')) response.headers = { ...response.headers, 'Retry-After': { $ref: '#/components/headers/Retry-After' } };
    if (code >= 300 && code < 400) response.headers = { ...response.headers, Location: { $ref: '#/components/headers/Location' } };
  }
  op.responses = responses;
}

/** `{type: object, additionalProperties: true}` with nothing named: a placeholder, not a shape. */
function isLooseObject(schema: Doc | undefined): boolean {
  return schema !== undefined && schema.type === 'object' && schema.properties === undefined && schema.$ref === undefined;
}
