import multipart from '@fastify/multipart';
import swagger from '@fastify/swagger';
import Fastify, { type FastifyBaseLogger, type FastifyError, type FastifyInstance, type HTTPMethods } from 'fastify';
import { PIPELINES } from '../../pipelines/index.js';
import type { Logger } from '../shared/logger.js';
import { AppError, ERROR_CODES, isAppError, toAppError } from '../shared/errors.js';
import type { ApiDeps } from './api-deps.js';
import { familyOf, httpError, ROUTE_FAMILIES, sendError } from './errors.js';
import { accountRoutes } from './routes/account-routes.js';
import { creditAlertRoutes } from './routes/credit-alert-routes.js';
import { auditRoutes } from './routes/audit-routes.js';
import { authRoutes } from './routes/auth-routes.js';
import { companyRoutes } from './routes/company-routes.js';
import { dashboardRoutes } from './routes/dashboard-routes.js';
import { emailBreachRoutes } from './routes/email-breach-routes.js';
import { passwordBreachRoutes } from './routes/password-breach-routes.js';
import { exposedKeysRoutes } from './routes/exposed-keys-routes.js';
import { repoScanRoutes } from './routes/repo-scan-routes.js';
import { emailValidityRoutes } from './routes/email-validity-routes.js';
import { emailEnrichRoutes } from './routes/email-enrich-routes.js';
import { emailComplianceRoutes } from './routes/email-compliance-routes.js';
import { validatorCompiler } from './validator.js';
import { genderRoutes } from './routes/gender-routes.js';
import { ipNetworkRoutes } from './routes/ip-network-routes.js';
import { domainReportRoutes } from './routes/domain-report-routes.js';
import { healthRoutes } from './routes/health-routes.js';
import { boundHeavyReads, DEFAULT_HEAVY_READS_PER_ACCOUNT } from './heavy-reads.js';
import { guardInputs } from './input-guards.js';
import { limitPerAddress } from './address-limits.js';
import { clientTimeouts, guardSlowBodies, type ClientLimits } from './slow-clients.js';
import { jobRoutes } from './routes/job-routes.js';
import { jobDeleteRoutes } from './routes/job-delete-routes.js';
import { keyRoutes } from './routes/key-routes.js';
import { phoneRoutes } from './routes/phone-routes.js';
import { resumeRoutes } from './routes/resume-routes.js';
import { metricsRoutes } from './routes/metrics-routes.js';
import { listRoutes } from './routes/list-routes.js';
import { listForm } from './routes/monitor-schemas.js';
import { monitorRoutes } from './routes/monitor-routes.js';
import { workflowRoutes } from './routes/workflow-routes.js';
import { workflowIngestRoutes } from './routes/workflow-ingest-routes.js';
import { workflowSecretRoutes } from './routes/workflow-secret-routes.js';
import { monitorRunRoutes } from './routes/monitor-run-routes.js';
import { webhookRoutes } from './routes/webhook-routes.js';
import { completeDocument } from './openapi/complete-document.js';
import { countHttpRequests } from './http-metrics.js';
import { logUsage } from './usage-log.js';
import { usageRoutes } from './routes/usage-routes.js';

/** JSON bodies are small everywhere; uploads go through multipart with their own limit. */
const JSON_BODY_LIMIT = 64 * 1024;
const ALL_METHODS: HTTPMethods[] = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

const BULK_UPLOAD_BODY = {
  required: true,
  content: {
    'multipart/form-data': {
      schema: {
        type: 'object',
        required: ['file'],
        // One lookup by `type`, several by `type` joined by commas, or one `lookup` field per lookup.
        anyOf: [{ required: ['type'] }, { required: ['lookup'] }],
        properties: {
          type: {
            type: 'string',
            pattern: `^\\s*(${Object.keys(PIPELINES).join('|')})\\s*(,\\s*(${Object.keys(PIPELINES).join('|')})\\s*)*$`,
            description: `The lookup, or several joined by commas: ${Object.keys(PIPELINES).join(', ')}`,
          },
          lookup: {
            type: 'array',
            items: { type: 'string', pattern: `^(${Object.keys(PIPELINES).join('|')})(:.+)?$` },
            description: 'One field per lookup, `TYPE` or `TYPE:COLUMN` (instead of `type`)',
          },
          max_error_rate: { type: 'string', description: 'Share of rows (0 to 1, default 0.05) that may end as `error` before the job fails' },
          dry_run: { type: 'string', enum: ['true', 'false'], description: 'Only estimate (as the query parameter)' },
          download_link: { type: 'string', enum: ['true', 'false'] },
          column: { type: 'string', description: 'Header of the key column; default: the pipeline\'s own (email, phone, company)' },
          default_country: {
            type: 'string',
            pattern: '^[A-Za-z]{2}$',
            description: 'phone_breaches: ISO 3166-1 alpha-2 country for numbers written without a country code',
          },
          delimiter: {
            type: 'string',
            description: 'Cell separator: comma, semicolon, tab or pipe (or `,` `;` `\\t` `|`); default: detected from the header and first rows',
          },
          encoding: {
            type: 'string',
            description: 'Text encoding of the file: utf-8, utf-16le, utf-16be, windows-1252 or iso-8859-1 (any case; also utf8, cp1252, latin1); default: detected (a BOM, else UTF-8 if the first 64 KiB are valid UTF-8, else Windows-1252)',
          },
          country_column: {
            type: 'string',
            description: 'phone_breaches: header of the column holding each row\'s country; default: a column named country or country code',
          },
          excel: { type: 'string', enum: ['true', 'false'], description: 'true: the result files start with a UTF-8 BOM, so that Excel shows accented text correctly' },
          file: { type: 'string', format: 'binary', description: 'The CSV; send it after the other fields' },
        },
      },
    },
  },
};

/**
 * Builds the API; never listens, so tests use app.inject() or listen on port 0 themselves. With
 * `clientLimits` (what `sluice serve` gives), its server times out slow clients and caps connections.
 */
export async function buildApp(deps: ApiDeps, log: Logger, clientLimits?: ClientLimits): Promise<FastifyInstance> {
  const app = Fastify({
    ...(clientLimits ? clientTimeouts(clientLimits) : {}),
    loggerInstance: log as FastifyBaseLogger,
    bodyLimit: JSON_BODY_LIMIT,
    return503OnClosing: true,
    // request.ip keys the login throttle: behind a proxy it would otherwise be the proxy's address
    // for every client, and trusting the header from anyone else would let a client pick its own.
    trustProxy: deps.settings.trustProxy ? [...deps.settings.trustProxy] : false,
    // Bad URLs and the like fail before routing; they still get our error shape.
    frameworkErrors: (error, request, reply) => void sendError(request, reply, shape(error, request.url, log)),
  });
  if (clientLimits) guardSlowBodies(app.server, clientLimits, log);
  if (clientLimits?.perAddress) limitPerAddress(app, clientLimits.perAddress, log);
  app.setValidatorCompiler(validatorCompiler());
  countHttpRequests(app, deps.engine.metrics);
  logUsage(app, deps.engine.store.usage, deps.engine.clock, log);
  // While shutting down, answer in-flight requests with Connection: close, so kept-alive
  // sockets do not hold the process open after the last response.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_request, reply) => {
    if (closing) reply.header('Connection', 'close');
  });
  const methodsByUrl = new Map<string, Set<string>>();
  app.addHook('onRoute', (route) => {
    const methods = methodsByUrl.get(route.url) ?? new Set<string>();
    for (const m of [route.method].flat()) methods.add(m);
    methodsByUrl.set(route.url, methods);
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Sluice API', version: '0.1.0', description: 'Bulk jobs, keys and lookups of the Sluice job engine.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // The upload is parsed by the multipart plugin, not validated as a body, so its form is
    // described here for the document only.
    transformObject: (documents) => {
      if (!('openapiObject' in documents)) return documents.swaggerObject;
      const { openapiObject } = documents;
      const bulk = (openapiObject as { paths?: Record<string, Record<string, Record<string, unknown>>> }).paths?.['/api/jobs/bulk']?.post;
      if (bulk) bulk.requestBody = BULK_UPLOAD_BODY;
      const lists = (openapiObject as { paths?: Record<string, Record<string, { requestBody?: { content: Record<string, unknown> } }>> }).paths?.['/api/lists']?.post;
      if (lists?.requestBody) lists.requestBody.content['multipart/form-data'] = { schema: listForm };
      return completeDocument(openapiObject);
    },
  });
  await app.register(multipart, {
    // Two files are let through so that the route can answer "exactly one file" with 422.
    limits: { fileSize: deps.settings.maxUploadBytes, files: 2, fields: 10, fieldSize: 1024, parts: 12 },
    throwFileSizeLimit: true,
  });

  app.setErrorHandler((error: FastifyError, request, reply) => sendError(request, reply, shape(error, request.url, log)));
  app.setNotFoundHandler((request, reply) => sendError(request, reply, httpError(404, ERROR_CODES.notFound, 'Not found')));

  guardInputs(app);
  boundHeavyReads(app, deps.settings.heavyReadsPerAccount ?? DEFAULT_HEAVY_READS_PER_ACCOUNT);
  await app.register(async (scope) => healthRoutes(scope, deps));
  await app.register(async (scope) => authRoutes(scope, deps));
  await app.register(async (scope) => keyRoutes(scope, deps));
  await app.register(async (scope) => auditRoutes(scope, deps));
  await app.register(async (scope) => usageRoutes(scope, deps));
  await app.register(async (scope) => jobRoutes(scope, deps));
  await app.register(async (scope) => jobDeleteRoutes(scope, deps));
  await app.register(async (scope) => genderRoutes(scope, deps));
  await app.register(async (scope) => emailBreachRoutes(scope, deps));
  await app.register(async (scope) => passwordBreachRoutes(scope, deps));
  await app.register(async (scope) => exposedKeysRoutes(scope, deps));
  await app.register(async (scope) => repoScanRoutes(scope, deps));
  await app.register(async (scope) => emailValidityRoutes(scope, deps));
  await app.register(async (scope) => emailEnrichRoutes(scope, deps));
  await app.register(async (scope) => emailComplianceRoutes(scope, deps));
  await app.register(async (scope) => webhookRoutes(scope, deps));
  await app.register(async (scope) => phoneRoutes(scope, deps));
  await app.register(async (scope) => companyRoutes(scope, deps));
  await app.register(async (scope) => ipNetworkRoutes(scope, deps));
  await app.register(async (scope) => domainReportRoutes(scope, deps));
  await app.register(async (scope) => accountRoutes(scope, deps));
  await app.register(async (scope) => creditAlertRoutes(scope, deps));
  await app.register(async (scope) => resumeRoutes(scope, deps));
  await app.register(async (scope) => metricsRoutes(scope, deps));
  await app.register(async (scope) => monitorRoutes(scope, deps));
  await app.register(async (scope) => monitorRunRoutes(scope, deps));
  await app.register(async (scope) => listRoutes(scope, deps));
  await app.register(async (scope) => workflowRoutes(scope, deps));
  await app.register(async (scope) => workflowIngestRoutes(scope, deps));
  await app.register(async (scope) => workflowSecretRoutes(scope, deps));
  await app.register(async (scope) => dashboardRoutes(scope));
  app.get('/api/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  // A known path with the wrong method is 405, not 404 (the gender endpoint has its own words).
  for (const [url, methods] of [...methodsByUrl]) {
    const missing = ALL_METHODS.filter((m) => !methods.has(m));
    if (missing.length === 0 || url === '*') continue;
    const allow = [...methods].filter((m) => m !== 'HEAD').join(', ');
    app.route({
      method: missing,
      url,
      schema: { hide: true },
      handler: async (request, reply) => {
        reply.header('Allow', allow);
        const message = familyOf(request.url) === ROUTE_FAMILIES.gender ? 'Only POST method is allowed' : 'Method not allowed';
        return sendError(request, reply, httpError(405, ERROR_CODES.invalidRequest, message));
      },
    });
  }
  return app;
}

/**
 * Deliberate errors keep their status and text; request-shape errors from Fastify become 400/413/
 * 415/422 with a plain message; anything else is a generic 500, logged with its cause.
 */
function shape(error: FastifyError, url: string, log: Logger): AppError {
  if (isAppError(error) && error.statusCode !== undefined) return error;
  if (isAppError(error)) {
    // An engine error with no HTTP meaning (storage down, a bug): its text stays in the log.
    log.error({ err: error }, 'request failed');
    return error.retryable
      ? new AppError(ERROR_CODES.storageUnavailable, 'Service temporarily unavailable, please retry', { statusCode: 503, cause: error })
      : new AppError(ERROR_CODES.internal, 'Internal server error', { statusCode: 500, cause: error });
  }
  const gender = familyOf(url) === ROUTE_FAMILIES.gender;
  if (error.validation) {
    return httpError(gender ? 400 : 422, ERROR_CODES.invalidRequest, gender ? 'Invalid request body' : `Invalid request: ${error.message}`);
  }
  switch (error.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return httpError(400, ERROR_CODES.invalidRequest, gender ? 'Invalid request body' : 'Malformed JSON body');
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return httpError(413, ERROR_CODES.payloadTooLarge, 'Request body is too large');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return gender ? httpError(400, ERROR_CODES.invalidRequest, 'Invalid request body') : httpError(415, ERROR_CODES.invalidRequest, 'Unsupported content type');
    case 'FST_ERR_BAD_URL':
    case 'FST_ERR_ASYNC_CONSTRAINT':
      return httpError(400, ERROR_CODES.invalidRequest, 'Malformed URL');
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return httpError(415, ERROR_CODES.invalidRequest, 'Expected a multipart/form-data body');
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_PARTS_LIMIT':
    case 'FST_FILES_LIMIT':
    case 'FST_FIELDS_LIMIT':
      return httpError(413, ERROR_CODES.payloadTooLarge, 'Upload is larger than allowed');
  }
  if (typeof error.statusCode === 'number' && error.statusCode >= 400 && error.statusCode < 500) {
    return httpError(error.statusCode === 414 ? 414 : 400, ERROR_CODES.invalidRequest, error.statusCode === 414 ? 'URL too long' : 'Bad request');
  }
  const appError = toAppError(error);
  log.error({ err: appError }, 'unexpected error');
  return new AppError(ERROR_CODES.internal, 'Internal server error', { statusCode: 500, cause: error });
}
