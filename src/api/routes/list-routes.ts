import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseCountry } from '../../../pipelines/phone-breaches.js';
import { FILE_ERROR_CODES } from '../../jobs/file-errors.js';
import { invalidView, listView } from '../../monitors/monitor-views.js';
import { MONITOR_TYPE_SPECS, monitorType } from '../../monitors/monitor-types.js';
import { ERROR_CODES } from '../../shared/errors.js';
import { MAX_TARGETS, type Page } from '../../storage/monitor-records.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { inputOptionsOf } from './input-options.js';
import { defaultCountryOf } from './monitor-routes.js';
import { errorResponses, errorSchema, idParams, invalidSchema, listJsonBody, listSchema, PAGE_PROPERTIES, targetPageSchema, typeFilter } from './monitor-schemas.js';
import { receiveFileUpload } from './upload.js';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { requestAudit } from './audit-routes.js';

const FORM_FIELDS = ['name', 'type', 'column', 'default_country', 'country_column', 'delimiter', 'encoding'] as const;

const createdSchema = {
  description: 'The list, ready, with what became of every row or item: targets added once each, duplicates and invalid ones counted',
  type: 'object',
  properties: { ...listSchema.properties, invalid: invalidSchema },
} as const;

/**
 * Target lists (spec 4.8: `GET/POST /api/lists`, scoped to a type). A list is made from a JSON
 * array or from a CSV upload of up to a million targets that streams into the object store and is
 * read back streaming, as a bulk job reads its input; invalid rows are counted and reported.
 */
export async function listRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);
  const service = deps.monitors;

  app.post<{ Body: { name: string; type: string; targets: string[]; default_country?: string } | undefined }>(
    '/api/lists',
    {
      schema: {
        tags: ['lists'],
        description:
          `JSON \`{name, type, targets, default_country}\`, or a multipart form: \`name\`, \`type\`, optional \`column\`, \`default_country\`, \`country_column\`, \`delimiter\`, \`encoding\`, then \`file\` (a CSV of up to ${MAX_TARGETS} targets, read as the bulk job of the type reads its input). ` +
          'Targets are normalised per type (emails lower-cased, phone numbers to E.164, company names and domains to their keys); invalid ones are counted by code and the first 20 shown, never added. A file a bulk job would refuse is 422 with that job\'s code (no_key_column, too_many_rows, malformed_csv, ...), and leaves no list.',
        body: { content: { 'application/json': { schema: listJsonBody } } },
        response: {
          201: createdSchema,
          ...errorResponses,
          409: { description: 'quota_exceeded: the account holds as many lists, or as many targets, as its quotas allow (GET /api/account shows them); no list is made', ...errorSchema },
          413: { description: 'The file is larger than allowed, or holds more targets than a list may', ...errorSchema },
        },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      if (request.isMultipart()) {
        const made = await fromCsv(request, caller.accountId);
        await audit(request, AUDIT_ACTIONS.listCreated, made.id);
        return reply.code(201).send(made);
      }
      const body = request.body;
      // The schema covers JSON only: a text/plain body arrives as a string and went on to a 500.
      if (!body || typeof body !== 'object' || Array.isArray(body)) {
        throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: a JSON body {name, type, targets} or a multipart form is required');
      }
      const { list, invalid } = await service.createList(caller.accountId, {
        name: body.name.trim(),
        type: body.type,
        targets: body.targets,
        defaultCountry: defaultCountryOf(body.default_country),
      });
      await audit(request, AUDIT_ACTIONS.listCreated, list.id);
      return reply.code(201).send({ ...listView(list), invalid: invalidView(invalid) });
    },
  );

  async function fromCsv(request: FastifyRequest, accountId: string) {
    const { fields, staged } = await receiveFileUpload(
      deps,
      request,
      FORM_FIELDS,
      (body) => service.stageListCsv(body),
      (s) => service.discardStaged(s.sourceKey),
    );
    try {
      const name = fields.name?.trim();
      if (!name || name.length > 200) throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: name is required (1 to 200 characters), sent before the file');
      if (!fields.type) throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: type is required, sent before the file');
      monitorType(fields.type);
      const defaultCountry = fields.default_country ? parseCountry(fields.default_country) : undefined;
      if (fields.default_country && defaultCountry === undefined) {
        throw httpError(422, ERROR_CODES.unknownCountry, `default_country must be an ISO 3166-1 alpha-2 code such as DE, got "${fields.default_country.slice(0, 40)}"`);
      }
      const { delimiter, encoding, countryColumn } = inputOptionsOf(fields);
      const options = {
        ...(fields.column ? { column: fields.column } : {}),
        ...(defaultCountry ? { defaultCountry } : {}),
        ...(countryColumn ? { countryColumn } : {}),
        ...(delimiter ? { delimiter } : {}),
        ...(encoding ? { encoding } : {}),
      };
      const { list, invalid } = await service.importList(accountId, { listId: staged.listId, sourceKey: staged.sourceKey, name, type: fields.type, options });
      return { ...listView(list), invalid: invalidView(invalid) };
    } catch (e: unknown) {
      await service.discardStaged(staged.sourceKey).catch(() => undefined);
      throw asFileError(e);
    }
  }

  app.get<{ Querystring: { type?: string } }>(
    '/api/lists',
    {
      schema: {
        tags: ['lists'],
        description: 'Every list of the account, newest first (spec 8: contact lists are not paginated).',
        querystring: { type: 'object', properties: { type: typeFilter } },
        response: { 200: { description: 'The lists', type: 'object', properties: { lists: { type: 'array', items: listSchema }, total: { type: 'integer' } } }, ...errorResponses },
      },
    },
    async (request) => {
      const type = request.query.type === undefined ? undefined : monitorType(request.query.type);
      const lists = (await deps.engine.store.monitors.lists(request.caller!.accountId, type)).map(listView);
      return { lists, total: lists.length };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/lists/:id',
    { schema: { tags: ['lists'], params: idParams, response: { 200: { description: 'The list', ...listSchema }, ...errorResponses } } },
    async (request) => listView(await service.list(request.caller!.accountId, request.params.id)),
  );

  app.get<{ Params: { id: string }; Querystring: Page }>(
    '/api/lists/:id/targets',
    {
      schema: {
        tags: ['lists'],
        description:
          'A page of the list\'s targets, normalised, in the list\'s order (the order they were given; a duplicate keeps its first place). Paged, unlike the lists themselves: a list holds up to a million targets.',
        params: idParams,
        querystring: { type: 'object', properties: PAGE_PROPERTIES },
        response: {
          200: targetPageSchema('A page of targets, each under its type\'s key (email, phone, company, ip, domain) and under `target`, with its 1-based place in the list', { position: { type: 'integer' } }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.caller!.accountId;
      const { limit, offset } = request.query;
      const list = await service.list(accountId, request.params.id);
      const { targets, total } = await deps.engine.store.monitors.listTargets(accountId, list.id, { limit, offset });
      const key = MONITOR_TYPE_SPECS[list.type].key;
      return { targets: targets.map((target, i) => ({ [key]: target, target, position: offset + i + 1 })), total, limit, offset };
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/lists/:id',
    {
      schema: {
        tags: ['lists'],
        description: 'Deletes the list, its targets and its uploaded file. Monitors it seeded keep their targets.',
        params: idParams,
        response: { 200: { description: 'Deleted', type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }, ...errorResponses },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      await service.removeList(caller.accountId, request.params.id);
      await audit(request, AUDIT_ACTIONS.listDeleted, request.params.id);
      return { id: request.params.id, deleted: true };
    },
  );
}

/** An error of the file (no key column, malformed CSV, too many rows) has no HTTP status yet: the file, not the request, is at fault. */
function asFileError(e: unknown): unknown {
  const error = e as { statusCode?: unknown; code?: unknown; message?: unknown };
  if (e instanceof Error && error.statusCode === undefined && typeof error.code === 'string' && FILE_ERROR_CODES.has(error.code)) {
    return httpError(422, error.code as (typeof ERROR_CODES)[keyof typeof ERROR_CODES], e.message);
  }
  return e;
}

