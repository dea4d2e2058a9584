import { PIPELINES } from '../../../pipelines/index.js';
import { int, nullable, object, ref, str, webhookEnvelope } from './schemas.js';

/**
 * What the route declarations do not say of each operation: its id, a summary, the statuses it
 * answers beyond the ones every route of its kind answers (see complete-document.ts), and the
 * bodies that routes read by hand. A route's own schema wins where it has one. A route missing
 * here fails test/api/openapi-lint.test.ts and the response check of the API harness by name.
 */
export interface OperationEntry {
  operationId: string;
  summary: string;
  /** Used only when the route declares none. */
  description?: string;
  /** Statuses this operation answers beyond the generic ones, each with what it means here. */
  errors?: Record<number, string>;
  /** Success responses to document when the route declares no body schema for them. */
  ok?: Record<number, { description: string; content?: Record<string, { schema: unknown }>; headers?: Record<string, unknown> }>;
  /** Statuses whose body, described by the route's own schema, is of this media type, not JSON. */
  mediaTypes?: Record<number, string>;
  /** A body the route reads by hand. */
  requestBody?: { required: boolean; content: Record<string, { schema: unknown }> };
  /** Request headers the route reads. */
  headers?: Array<{ name: string; description: string; schema: unknown }>;
}

const json = (schema: unknown) => ({ 'application/json': { schema } });
const jsonBody = (schema: unknown, required = true) => ({ required, content: json(schema) });
const JOB = ref('Job');
const PHONE_JOB = {
  allOf: [
    JOB,
    object(['feature'], {
      feature: { type: 'string', enum: ['breaches'] },
      download_urls: { type: 'object', description: 'Completed jobs: a fresh presigned URL per filter', additionalProperties: object(['download_url', 'expires_at'], { download_url: str, expires_at: str }) },
    }),
  ],
};
const ID_BODY = object(['id'], { id: { type: 'string', description: 'The webhook id' } });
const QUERY_BODY = (what: string) => object(['query'], { query: { type: 'string', description: what } });
const WEBHOOK_FIELDS = {
  url: { type: 'string', description: 'HTTPS address the events are POSTed to (generic webhooks)' },
  events: { type: 'array', items: str, minItems: 1 },
  description: { type: 'string', maxLength: 500 },
  is_active: { type: 'boolean' },
  kind: { type: 'string', enum: ['generic', 'telegram'] },
  telegram_bot_token: str,
  telegram_chat_id: str,
};
const LOOKUP_TYPES = Object.keys(PIPELINES).join(', ');
const GENDER_ANSWER = object(['email', 'gender', 'probability', 'credits'], {
  email: str,
  gender: { type: 'string', enum: ['male', 'female', 'unknown'] },
  country: nullable('string'),
  probability: { type: 'number' },
  credits: int,
  cached: { type: 'boolean' },
});
const COMPANY_CANDIDATE = object(['name'], { name: str, domain: nullable('string'), industry: nullable('string'), employee_count: nullable('integer'), country: nullable('string'), website: nullable('string'), score: { type: 'number' } });
/** A page of a log (audit, usage), newest first: `next_before` is the cursor of the next page. */
const entryPage = (items: unknown) => ({
  200: {
    description: 'A page of entries; `next_before` asks for the next (older) page',
    content: json(object(['entries', 'next_before'], { entries: { type: 'array', items }, next_before: nullable('integer') })),
  },
});
const REDIRECT = {
  description: 'Redirect to a fresh presigned URL of the file',
  headers: { Location: { $ref: '#/components/headers/Location' } },
};

export const OPERATION_CATALOG: Record<string, OperationEntry> = {
  'GET /healthz': {
    operationId: 'getHealth',
    summary: 'Liveness: the process answers',
    description: 'Answers 200 while the process runs; no key needed.',
    ok: { 200: { description: 'Alive', content: json(ref('Status')) } },
  },
  'GET /readyz': {
    operationId: 'getReadiness',
    summary: 'Readiness: the database and the object store answer',
    description: 'Answers 200 when the store and the object store answer, else 503 `{status: not_ready}`; no key needed.',
    ok: { 200: { description: 'Ready', content: json(ref('Status')) }, 503: { description: 'not_ready: the database or the object store does not answer', content: json(ref('Status')) } },
  },
  'POST /api/auth/login': {
    operationId: 'login',
    summary: 'Log in with email and password',
    description: 'Gives a session token to create API keys with (spec 4.1).',
    ok: {
      200: {
        description: 'A session token and the user',
        content: json(object(['token', 'expires_at', 'user'], { token: str, expires_at: str, user: object(['id', 'email'], { id: str, email: str }) })),
      },
    },
  },
  'POST /api/auth/logout': { operationId: 'logout', summary: 'End a session', description: 'The session token given as Bearer stops working.' },
  'POST /api/keys': {
    operationId: 'createKeyWithSession',
    summary: 'Create an admin API key with a session token',
    description: 'Spec 4.1: Bearer is the session token from login; body `name`.',
    requestBody: jsonBody(object(['name'], { name: { type: 'string', maxLength: 200 } })),
    ok: { 200: { description: 'The new key, whose secret is shown this once', content: json(object(['id', 'key', 'name', 'created_at'], { id: str, key: str, name: str, created_at: str })) } },
    errors: { 400: 'Name is required', 422: 'name is not a string, or too long' },
  },
  'GET /api/account/audit': {
    operationId: 'listAuditEntries',
    summary: 'The account\'s audit log, newest first',
    ok: entryPage(object(['id', 'at', 'action', 'actor'], { id: int, at: str, action: str, actor: object(['type'], { type: str, id: nullable('string'), name: nullable('string') }), target_id: nullable('string'), source_ip: nullable('string'), user_agent: nullable('string') })),
    errors: { 403: 'Only an admin key reads the audit log' },
  },
  'GET /api/account/usage': {
    operationId: 'listUsageEntries',
    summary: 'The account\'s usage log: every keyed request with its credits and response time, newest first',
    ok: entryPage(
      object(['id', 'at', 'method', 'route', 'status', 'credits', 'duration_ms', 'key_id'], {
        id: int,
        at: str,
        method: str,
        route: { type: 'string', description: 'The route template, such as /api/jobs/:id' },
        status: int,
        credits: { type: 'integer', description: 'What the answer reported it charged (`credits` or `credits_used`); 0 for the rest' },
        duration_ms: { type: 'number' },
        key_id: str,
        source_ip: nullable('string'),
      }),
    ),
    errors: { 403: 'Only an admin key reads the usage log', 422: 'limit, before or since invalid' },
  },
  'POST /api/account/keys': {
    operationId: 'createKey',
    summary: 'Create an API key',
    requestBody: jsonBody(object(['name'], { name: { type: 'string', maxLength: 200 }, role: { type: 'string', enum: ['admin', 'tech', 'readonly'] }, expires_at: { type: 'string', format: 'date-time', description: 'When the key stops working (in the future, within 5 years); unset: never' } })),
    ok: { 200: { description: 'The new key, whose secret is shown this once', content: json({ allOf: [ref('ApiKey'), object(['key'], { key: str })] }) } },
    errors: { 400: 'Name is required', 403: 'A readonly key, or a non-admin key asking for an admin key', 409: 'too_many_keys: the account holds as many keys that are not revoked as its api_keys quota allows', 422: 'name or role invalid' },
  },
  'GET /api/account/keys': {
    operationId: 'listKeys',
    summary: 'List the account\'s API keys (never their secrets)',
    description: 'Every key of the account, with its prefix, role and whether it is active.',
    ok: { 200: { description: 'The keys', content: json(object(['keys', 'total'], { keys: { type: 'array', items: ref('ApiKey') }, total: int })) } },
  },
  'PATCH /api/account/keys': {
    operationId: 'setKeyActive',
    summary: 'Enable or disable an API key',
    ok: { 200: { description: 'Done', content: json(ref('Message')) } },
    errors: { 400: 'id and action are required', 403: 'A readonly key, or a key of a higher role', 404: 'No such key', 409: 'The key is revoked' },
  },
  'POST /api/account/keys/roll': {
    operationId: 'rollKey',
    summary: 'Roll an API key: a new secret now, the old one ends after a grace period',
    requestBody: jsonBody(object(['id'], { id: { type: 'string', format: 'uuid', description: 'The key to roll' }, grace_seconds: { type: 'integer', minimum: 0, maximum: 604800, default: 86400, description: 'How long the old key keeps working' } })),
    ok: { 200: { description: 'The new key, whose secret is shown this once, and the rolled key with its end', content: json({ allOf: [ref('ApiKey'), object(['key', 'rolled'], { key: str, rolled: ref('ApiKey') })] }) } },
    errors: { 400: 'id is required and must be a UUID', 403: 'A readonly key, or a key of a higher role', 404: 'No such key', 409: 'invalid_state: the key is revoked, past its end or rolled already; too_many_keys: the api_keys quota is full', 422: 'grace_seconds is not a whole number from 0 to 604800, or the body is not an object' },
  },
  'GET /api/account/keys/reveal': {
    operationId: 'revealKey',
    summary: 'Show a new key\'s secret again, within its reveal window',
    ok: { 200: { description: 'The secret', content: json(object(['key'], { key: str })) } },
    errors: { 400: 'id is required and must be a UUID', 403: 'Not an admin key, nor the key itself', 404: 'No such key', 410: 'The reveal window is over' },
  },
  'POST /api/jobs/bulk': {
    operationId: 'createBulkJob',
    summary: 'Upload a CSV and start a bulk job (or estimate it with dry_run)',
    ok: { 202: { description: 'The queued job (an Idempotency-Key retry answers with the same job)', content: json(JOB) } },
    headers: [{ name: 'Idempotency-Key', description: 'Makes a retry safe: the same key and request give the same job, once (1 to 255 characters)', schema: { type: 'string', minLength: 1, maxLength: 255 } }],
    errors: {
      402: 'insufficient_credits: nothing available to spend',
      403: 'A readonly key',
      409: 'idempotency_in_flight: a request with this Idempotency-Key is still in progress; quota_exceeded: the file would take the account past its stored_bytes quota (it is not kept)',
      413: 'The file is larger than allowed',
      415: 'Not a multipart/form-data body',
      422: `A field is invalid (type must be among ${LOOKUP_TYPES}), the file is missing or not a readable CSV, or the Idempotency-Key was used with another request`,
    },
  },
  'GET /api/jobs': {
    operationId: 'listJobs',
    summary: 'List the account\'s jobs, newest first',
    description: 'Paged with `limit` and `offset`; `status` filters.',
    ok: { 200: { description: 'A page of jobs', content: json(object(['jobs', 'total', 'limit', 'offset'], { jobs: { type: 'array', items: JOB }, total: int, limit: int, offset: int })) } },
  },
  'GET /api/jobs/{id}': {
    operationId: 'getJob',
    summary: 'A job and its progress',
    description: 'Counts, percent, stall state, rate and estimated time left; download paths once completed.',
    ok: { 200: { description: 'The job', content: json(JOB) } },
    errors: { 410: 'The job was deleted' },
  },
  'DELETE /api/jobs/{id}': { operationId: 'deleteJob', summary: 'Delete a finished job and its files', errors: { 403: 'A readonly key', 410: 'Already deleted' } },
  'GET /api/jobs/{id}/download': {
    operationId: 'downloadJobResults',
    summary: 'Download a job\'s result CSV (or its rows so far, with partial=true)',
    ok: {
      200: {
        description: 'With `format=json`: a fresh presigned URL. With `partial=true` on an unfinished job: the CSV itself, marked partial',
        content: {
          'application/json': { schema: object(['download_url', 'expires_at'], { download_url: str, expires_at: str }) },
          'text/csv': { schema: { type: 'string' } },
        },
        headers: {
          'X-Sluice-Partial': { description: 'With partial=true: whether the file is partial', schema: { type: 'string', enum: ['true', 'false'] } },
          'X-Sluice-Rows-Included': { description: 'Partial files: rows in this file', schema: { type: 'string' } },
          'X-Sluice-Rows-Total': { description: 'Partial files: rows of the job', schema: { type: 'string' } },
        },
      },
      302: REDIRECT,
    },
    errors: { 409: 'The job has no result yet (unfinished without partial=true, or not split yet); the message says to ask with partial=true', 410: 'The job was deleted' },
  },
  'POST /api/jobs/{id}/cancel': {
    operationId: 'cancelJob',
    summary: 'Cancel a job',
    description: 'Stops a queued, running or paused job; what it charged stays charged, partial results stay downloadable.',
    ok: { 200: { description: 'The cancelled job', content: json(JOB) } },
    errors: { 403: 'A readonly key', 409: 'The job has already ended', 410: 'The job was deleted' },
  },
  'POST /api/jobs/{id}/retry-failed': {
    operationId: 'retryFailedRows',
    summary: 'Run a job\'s error rows again',
    ok: { 200: { description: 'The job, running again', content: json(JOB) } },
    errors: { 403: 'A readonly key', 409: 'nothing_to_retry, or the job has not ended', 410: 'The job was deleted' },
  },
  'POST /api/jobs/{id}/resume': {
    operationId: 'resumeJob',
    summary: 'Resume a paused, stalled or failed job',
    errors: { 402: 'insufficient_credits: paused out of credits and the account still has none; top up first', 403: 'A readonly key' },
  },
  'GET /api/account': { operationId: 'getAccount', summary: 'The account\'s balance, reservations and rate limit' },
  'GET /api/account/credit-alert': { operationId: 'getCreditAlert', summary: 'The account\'s credit alert threshold' },
  'PUT /api/account/credit-alert': { operationId: 'setCreditAlert', summary: 'Set or remove the account\'s credit alert threshold', errors: { 403: 'A readonly key', 422: 'threshold is not a whole number from 1, nor null' } },
  'POST /api/email/gender': {
    operationId: 'lookupGenderLegacy',
    summary: 'Gender of an email address\'s first name (older path)',
    description: 'The same lookup as POST /api/lookup/email/gender (spec 4.3); 1 credit, free when cached.',
    ok: { 200: { description: 'The answer', content: json(GENDER_ANSWER) } },
    errors: { 400: 'Invalid request body, or an invalid email address', 402: 'insufficient_credits', 502: 'The lookup failed', 503: 'The lookup is unavailable' },
  },
  'POST /api/lookup/email/gender': {
    operationId: 'lookupGender',
    summary: 'Gender of an email address\'s first name',
    description: 'Spec 4.3; 1 credit, free when answered within the repeat-free window.',
    ok: { 200: { description: 'The answer', content: json(GENDER_ANSWER) } },
    errors: { 400: 'Invalid request body, or an invalid email address', 402: 'insufficient_credits', 502: 'The lookup failed', 503: 'The lookup is unavailable' },
  },
  'POST /api/lookup/email/breaches': { operationId: 'lookupEmailBreaches', summary: 'Breaches an email address appears in' },
  'POST /api/webhooks': {
    operationId: 'createWebhook',
    summary: 'Register a webhook',
    requestBody: jsonBody(object([], WEBHOOK_FIELDS)),
    ok: { 200: { description: 'The webhook (and, once, its signing secret)', content: json(webhookEnvelope(ref('Webhook'))) } },
    errors: { 400: 'url is required', 403: 'Only an admin key', 409: 'too_many_webhooks: the account has as many as it may; delete one first', 422: 'A field is invalid, or the address is not allowed' },
  },
  'GET /api/webhooks': {
    operationId: 'listWebhooks',
    summary: 'List the account\'s webhooks',
    description: 'Paged with `limit` and `offset`, in the webhook envelope.',
    ok: { 200: { description: 'A page of webhooks', content: json(object(['success', 'result', 'total', 'limit', 'offset', 'message'], { success: { type: 'boolean' }, result: { type: 'array', items: ref('Webhook') }, total: int, limit: int, offset: int, message: str })) } },
  },
  'PUT /api/webhooks': {
    operationId: 'updateWebhook',
    summary: 'Change a webhook',
    description: 'Body `id` and the fields to change; `url` again for a generic webhook.',
    requestBody: jsonBody(object(['id'], { id: str, ...WEBHOOK_FIELDS })),
    ok: { 200: { description: 'The updated webhook', content: json(webhookEnvelope(object(['status', 'webhook'], { status: str, webhook: ref('Webhook') }))) } },
    errors: { 400: 'id (or url) is required', 403: 'Only an admin key', 404: 'No such webhook', 422: 'A field is invalid' },
  },
  'DELETE /api/webhooks': {
    operationId: 'deleteWebhookById',
    summary: 'Delete a webhook named in the body',
    description: 'The older form of DELETE /api/webhooks/{id}: body `id`.',
    requestBody: jsonBody(ID_BODY),
    ok: { 200: { description: 'Deleted; its deliveries stopped', content: json(webhookEnvelope(ref('Status'))) } },
    errors: { 400: 'id is required', 403: 'Only an admin key', 404: 'No such webhook', 422: 'The body is not a JSON object' },
  },
  'GET /api/webhooks/{id}': {
    operationId: 'getWebhook',
    summary: 'A webhook',
    description: 'The webhook; an admin key also sees its signing secret.',
    ok: { 200: { description: 'The webhook', content: json(webhookEnvelope(ref('Webhook'))) } },
  },
  'DELETE /api/webhooks/{id}': {
    operationId: 'deleteWebhook',
    summary: 'Delete a webhook',
    description: 'Its pending deliveries stop.',
    ok: { 200: { description: 'Deleted', content: json(webhookEnvelope(ref('Status'))) } },
    errors: { 403: 'Only an admin key' },
  },
  'POST /api/webhooks/test': {
    operationId: 'testWebhook',
    summary: 'Send a test event to a webhook',
    description: 'Body `id`; answers with what the receiver did.',
    requestBody: jsonBody(ID_BODY),
    ok: { 200: { description: 'What the receiver answered', content: json(webhookEnvelope(object(['status'], { status: str }))) } },
    errors: { 400: 'id is required', 403: 'Only an admin key', 404: 'No such webhook', 422: 'The body is not a JSON object' },
  },
  'POST /api/webhooks/{id}/rotate-secret': {
    operationId: 'rotateWebhookSecret',
    summary: 'Rotate a webhook\'s signing secret, with both secrets signing during an overlap',
    requestBody: jsonBody(object([], { overlap_seconds: { type: 'integer', minimum: 0, maximum: 604800, default: 86400, description: 'How long the previous secret signs beside the new one' } }), false),
    ok: {
      200: {
        description: 'The new signing secret, shown this once, and the end of the overlap (null without one)',
        content: json(webhookEnvelope(object(['signing_secret', 'previous_secret_valid_until'], { signing_secret: str, previous_secret_valid_until: nullable('string') }))),
      },
    },
    errors: { 403: 'Only an admin key', 409: 'invalid_state: a Telegram webhook has no signing secret, or another rotation won a race', 422: 'overlap_seconds is not a whole number from 0 to 604800, or the body is not an object' },
  },
  'GET /api/webhooks/deliveries': {
    operationId: 'listWebhookDeliveries',
    summary: 'A webhook\'s latest deliveries',
    ok: { 200: { description: 'The deliveries, newest first (a bare array, spec 4.2)', content: json({ type: 'array', items: ref('Delivery') }) } },
    errors: { 400: 'webhook_id is required', 404: 'No such webhook' },
  },
  'POST /api/webhooks/deliveries/{id}/redeliver': {
    operationId: 'redeliverWebhookDelivery',
    summary: 'Send a failed delivery again',
    description: 'Queues a failed delivery again with the same webhook-id.',
    ok: { 200: { description: 'The delivery, pending again', content: json(webhookEnvelope(ref('Delivery'))) } },
    errors: { 403: 'Only an admin key', 409: 'Only a failed delivery (not a test) is sent again' },
  },
  'POST /api/agent/phone-breaches': {
    operationId: 'lookupPhoneBreaches',
    summary: 'Breaches a phone number appears in',
    requestBody: jsonBody(QUERY_BODY('The phone number, in international form')),
    ok: { 200: { description: 'The answer (spec 4.4)', content: json(object(['credits'], { credits: int })) } },
    errors: { 400: 'query is missing or not a phone number', 402: 'insufficient_credits', 502: 'The lookup failed', 503: 'The lookup is unavailable' },
  },
  'POST /api/phone-jobs': {
    operationId: 'createPhoneJob',
    summary: 'Start a phone breach job from a list of numbers or a file',
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: object(['feature', 'numbers'], {
            feature: { type: 'string', enum: ['breaches'] },
            numbers: { type: 'array', items: str, minItems: 1 },
            default_country: { type: 'string', pattern: '^[A-Za-z]{2}$' },
            download_link: { type: 'boolean' },
            max_error_rate: { type: 'number', minimum: 0, maximum: 1 },
            excel: { type: 'boolean' },
          }),
        },
        'multipart/form-data': {
          schema: object(['feature', 'file'], {
            feature: { type: 'string', enum: ['breaches'] },
            default_country: str,
            country_column: str,
            download_link: { type: 'string', enum: ['true', 'false'] },
            max_error_rate: str,
            delimiter: str,
            encoding: str,
            excel: { type: 'string', enum: ['true', 'false'] },
            file: { type: 'string', format: 'binary' },
          }),
        },
      },
    },
    ok: { 202: { description: 'The queued job', content: json(PHONE_JOB) } },
    headers: [{ name: 'Idempotency-Key', description: 'Multipart uploads: makes a retry safe', schema: { type: 'string', minLength: 1, maxLength: 255 } }],
    errors: { 402: 'insufficient_credits', 403: 'A readonly key', 409: 'idempotency_in_flight', 413: 'Too large', 415: 'Neither JSON nor multipart', 422: 'A field is invalid' },
  },
  'GET /api/phone-jobs': {
    operationId: 'getPhoneJob',
    summary: 'A phone job and its progress',
    description: 'Query `id`; with download URLs once completed.',
    ok: { 200: { description: 'The job', content: json(PHONE_JOB) } },
    errors: { 400: 'id is required', 404: 'No such phone job', 410: 'The job was deleted' },
  },
  'POST /api/phone-jobs/resume': {
    operationId: 'resumePhoneJob',
    summary: 'Resume a paused, stalled or failed phone job',
    errors: { 400: 'id is required', 402: 'insufficient_credits: paused out of credits and the account still has none; top up first', 403: 'A readonly key' },
  },
  'POST /api/agent/company': {
    operationId: 'searchCompany',
    summary: 'Search the company directory by name or domain',
    requestBody: jsonBody(QUERY_BODY('A company name or domain, 200 characters at most')),
    ok: {
      200: {
        description: 'The candidates and the best one\'s profile (spec 4.5); 1 credit per candidate returned',
        content: json(object(['company', 'results', 'profile', 'total', 'credits'], { company: str, results: { type: 'array', items: COMPANY_CANDIDATE }, profile: { type: ['object', 'null'] }, total: int, credits: int })),
      },
    },
    errors: { 400: 'query is missing or invalid', 402: 'insufficient_credits', 502: 'The search failed', 503: 'The search is unavailable' },
  },
  'POST /api/bulk-company-search': {
    operationId: 'searchCompanies',
    summary: 'Search the company directory for many queries at once',
    ok: {
      200: {
        description: 'One answer per query, in order (company null without a confident match)',
        content: json(object(['results', 'credits_used'], { results: { type: 'array', items: object(['query', 'company'], { query: str, company: { type: ['object', 'null'] } }) }, credits_used: int })),
      },
    },
    errors: { 402: 'insufficient_credits', 502: 'The search failed', 503: 'The search is unavailable' },
  },
  'POST /api/agent/domain': { operationId: 'domainReport', summary: 'A domain report: DNS, mail authentication, registration, subdomains, discovery files' },
  'POST /api/bulk-domain-search': { operationId: 'bulkDomainSearch', summary: 'Domain reports for up to 100 domains' },
  'POST /api/monitors': { operationId: 'createMonitor', summary: 'Create a monitor over a list of targets', errors: { 402: 'insufficient_credits', 403: 'A readonly key' } },
  'GET /api/monitors': { operationId: 'listMonitors', summary: 'List the account\'s monitors', description: 'Paged, newest first.' },
  'GET /api/monitors/{id}': { operationId: 'getMonitor', summary: 'A monitor', description: 'Its settings, schedule, targets count and last run.' },
  'PATCH /api/monitors/{id}': { operationId: 'updateMonitor', summary: 'Change a monitor', errors: { 403: 'A readonly key', 409: 'The monitor is not in a state that allows this' } },
  'DELETE /api/monitors/{id}': { operationId: 'deleteMonitor', summary: 'Delete a monitor', errors: { 403: 'A readonly key' } },
  'POST /api/monitors/{id}/pause': { operationId: 'pauseMonitor', summary: 'Pause a monitor', errors: { 403: 'A readonly key', 409: 'Not active' } },
  'POST /api/monitors/{id}/resume': { operationId: 'resumeMonitor', summary: 'Resume a paused monitor', errors: { 403: 'A readonly key', 409: 'Not paused' } },
  'GET /api/monitors/{id}/targets': { operationId: 'listMonitorTargets', summary: 'A monitor\'s targets', description: 'Paged, in the list\'s order.' },
  'POST /api/monitors/{id}/targets': { operationId: 'addMonitorTargets', summary: 'Add targets to a monitor', errors: { 403: 'A readonly key' } },
  'DELETE /api/monitors/{id}/targets': { operationId: 'removeMonitorTargets', summary: 'Remove targets from a monitor', errors: { 403: 'A readonly key' } },
  'POST /api/agent/monitors/{id}/run': { operationId: 'runMonitor', summary: 'Run a monitor now', errors: { 402: 'insufficient_credits', 403: 'A readonly key' } },
  'GET /api/monitoring/targets': { operationId: 'listAllMonitorTargets', summary: 'Every monitored target of the account' },
  'GET /api/monitors/{id}/runs/{runId}/results': { operationId: 'getMonitorRunResults', summary: 'A monitor run\'s results (a bare array)' },
  'GET /api/monitors/{id}/runs/{runId}/results/download': {
    operationId: 'downloadMonitorRunResults',
    summary: 'Download a monitor run\'s results as CSV',
    mediaTypes: { 200: 'text/csv' },
  },
  'GET /api/agent/monitors/{id}/runs': { operationId: 'listMonitorRuns', summary: 'A monitor\'s runs, newest first' },
  'GET /api/agent/monitors/{id}/runs/{runId}/results': { operationId: 'getMonitorRunResultsPaged', summary: 'A monitor run\'s results, paged' },
  'GET /api/agent/monitoring/runs': { operationId: 'listAllMonitorRuns', summary: 'Every monitor run of the account, newest first' },
  'GET /api/agent/monitoring/results': { operationId: 'listAllMonitorResults', summary: 'Every monitor result of the account, paged' },
  // The routes below declare their own ids, bodies and answers; the entries make the document
  // complete them with what every keyed route answers (401, 429, 413, 415, 500, ...).
  'POST /api/lookup/email/validity': { operationId: 'verifyEmailValidity', summary: 'Verify that an email address can receive mail' },
  'POST /api/email/validity/enrich': { operationId: 'enrichEmail', summary: 'The free enrich report of an email address and its domain' },
  'POST /api/lookup/email/compliance': { operationId: 'emailCompliance', summary: 'Whether an address may be emailed, and under which laws' },
  'POST /api/lookup/email/password/breaches': { operationId: 'checkPasswordBreaches', summary: 'Check a password against breaches by k-anonymity' },
  'GET /api/range/{prefix}': { operationId: 'getPasswordRange', summary: 'The SHA-1 suffixes of a 5-hex prefix (k-anonymity range)', mediaTypes: { 200: 'text/plain' } },
  'POST /api/lookup/breaches/exposed-keys': { operationId: 'scanExposedKeys', summary: 'Scan text for exposed credentials' },
  'POST /api/lookup/breaches/github': { operationId: 'startRepositoryScan', summary: 'Scan a public repository and its history for exposed credentials' },
  'GET /api/lookup/breaches/github/{id}': { operationId: 'getRepositoryScan', summary: 'A repository scan and, once completed, its findings' },
  'POST /api/agent/ip-network': { operationId: 'ipNetworkLookup', summary: 'Who holds an IP address and who routes it' },
  'POST /api/bulk-ip-search': { operationId: 'bulkIpSearch', summary: 'IP network lookups for up to 100 addresses' },
  'POST /api/lists': { operationId: 'createList', summary: 'Create a list of targets (JSON or CSV upload)', errors: { 403: 'A readonly key', 415: 'Neither JSON nor multipart' } },
  'GET /api/lists': { operationId: 'listLists', summary: 'List the account\'s lists' },
  'GET /api/lists/{id}': { operationId: 'getList', summary: 'A list', description: 'The list and its counts; its targets are read page by page from GET /api/lists/{id}/targets.' },
  'GET /api/lists/{id}/targets': { operationId: 'listListTargets', summary: 'A page of a list\'s targets, in the list\'s order' },
  'DELETE /api/lists/{id}': { operationId: 'deleteList', summary: 'Delete a list', errors: { 403: 'A readonly key' } },
  'POST /api/workflows': { operationId: 'createWorkflow', summary: 'Create a workflow', errors: { 403: 'A readonly key', 422: 'invalid_workflow, step_type_unsupported, trigger_unsupported, invalid_reference or invalid_expression' } },
  'GET /api/workflows': { operationId: 'listWorkflows', summary: 'List workflows' },
  'GET /api/workflows/runs': { operationId: 'listWorkflowRuns', summary: 'List workflow runs' },
  'GET /api/workflows/logs': { operationId: 'listWorkflowLogs', summary: "A run's log", errors: { 400: 'bad_request: run_id missing' } },
  'GET /api/workflow-runs/{runId}': { operationId: 'getWorkflowRun', summary: 'Get a workflow run', errors: { 404: 'workflow_run_not_found' } },
  'POST /api/workflow-runs/{runId}/cancel': { operationId: 'cancelWorkflowRun', summary: 'Cancel a run', errors: { 403: 'A readonly key', 404: 'workflow_run_not_found', 409: 'invalid_state: the run has ended' } },
  'POST /api/workflow-runs/{runId}/redrive': { operationId: 'redriveWorkflowRun', summary: 'Redrive a failed run', errors: { 403: 'A readonly key', 404: 'workflow_run_not_found', 409: 'invalid_state: the run has not failed' } },
  'GET /api/workflow-templates': { operationId: 'listWorkflowTemplates', summary: 'List workflow templates' },
  'POST /api/workflow-templates/{templateId}/clone': { operationId: 'cloneWorkflowTemplate', summary: 'Create a workflow from a template', errors: { 403: 'A readonly key', 404: 'not_found: no such template', 422: 'invalid_request' } },
  'PUT /api/workflow-secrets/{name}': { operationId: 'putWorkflowSecret', summary: 'Create or replace a workflow secret', errors: { 403: 'A readonly key', 422: 'invalid_request: a bad name, or a value empty or too long' } },
  'GET /api/workflow-secrets': { operationId: 'listWorkflowSecrets', summary: 'List workflow secrets' },
  'DELETE /api/workflow-secrets/{name}': { operationId: 'deleteWorkflowSecret', summary: 'Delete a workflow secret', errors: { 403: 'A readonly key', 404: 'workflow_secret_not_found', 422: 'invalid_request: a bad name' } },
  'POST /api/workflow-runs/{runId}/rerun': { operationId: 'rerunWorkflowRun', summary: 'Run an ended run again from a step', errors: { 403: 'A readonly key', 404: 'workflow_run_not_found', 409: 'invalid_state: the run is queued or running', 422: 'invalid_request: no such step in the run\'s version', 429: 'too_many_runs' } },
  'GET /api/workflows/{id}': { operationId: 'getWorkflow', summary: 'Get a workflow', errors: { 404: 'workflow_not_found' } },
  'PUT /api/workflows/{id}': { operationId: 'updateWorkflow', summary: 'Update a workflow', errors: { 403: 'A readonly key', 404: 'workflow_not_found', 422: 'invalid_workflow, step_type_unsupported, trigger_unsupported, invalid_reference or invalid_expression' } },
  'DELETE /api/workflows/{id}': { operationId: 'deleteWorkflow', summary: 'Delete a workflow', errors: { 403: 'A readonly key', 404: 'workflow_not_found' } },
  'POST /api/workflows/{id}/ingest-token': { operationId: 'rotateWorkflowIngestToken', summary: 'Make or rotate the ingest URL', errors: { 403: 'A readonly key', 404: 'workflow_not_found' } },
  'DELETE /api/workflows/{id}/ingest-token': { operationId: 'revokeWorkflowIngestToken', summary: 'Revoke the ingest URL', errors: { 403: 'A readonly key', 404: 'workflow_not_found' } },
  'POST /api/workflows/{id}/run': { operationId: 'runWorkflow', summary: 'Run a workflow', errors: { 403: 'A readonly key', 404: 'workflow_not_found', 409: 'invalid_state: the workflow is not active', 429: 'too_many_runs, or rate_limited' } },
  'POST /api/ingest/workflows/{token}': { operationId: 'ingestWorkflowRun', summary: 'Start a run through the ingest URL', errors: { 404: 'not_found: no such token, or its workflow is not active', 413: 'The body is longer than the cap', 415: 'Not application/json', 422: 'invalid_request: not a JSON object, or nested too deep', 429: 'rate_limited (Retry-After), or too_many_runs' } },
};

/** Tags with what they group, declared at the top of the document. */
export const TAGS = [
  { name: 'operations', description: 'Liveness and readiness, for load balancers and orchestrators' },
  { name: 'keys', description: 'Logging in, API keys and the audit log (spec 4.1)' },
  { name: 'account', description: 'The account\'s balance and rate limit' },
  { name: 'jobs', description: 'Bulk jobs: upload, progress, results, cancel, resume, delete (spec 4.7)' },
  { name: 'lookups', description: 'Single lookups: email gender, breaches, validity, enrich and compliance; passwords by k-anonymity; exposed credentials in text and repositories (spec 4.3, 4.6)' },
  { name: 'phone', description: 'Phone breach lookups and jobs (spec 4.4)' },
  { name: 'company', description: 'Company search, single and bulk (spec 4.5)' },
  { name: 'domain', description: 'Domain reports, single and bulk (spec 4.5, 4.7; docs/domain-report.md)' },
  { name: 'webhooks', description: 'Webhooks, their deliveries and test events (spec 4.2, 7)' },
  { name: 'monitors', description: 'Monitors over lists of targets, their runs and results (spec 4.8)' },
  { name: 'lists', description: 'Lists of targets that monitors watch' },
  { name: 'ip', description: 'IP network lookups, single and bulk: holder, AS, routing and peering (spec 4.5, 4.7)' },
  { name: 'workflows', description: 'Workflows: versioned definitions, runs, logs, cancel and redrive, and the public ingest URL (spec 2.5-2.7, 4.8; docs/workflows.md)' },
];
