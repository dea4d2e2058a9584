import { familyOf, ROUTE_FAMILIES } from '../errors.js';

/**
 * The spec's three error bodies as named schemas, and which one a route answers with for a status:
 * the same choice `sendError` makes, so that the document cannot promise one shape and send another.
 */
export const ERROR_SCHEMAS = {
  Error: {
    type: 'object',
    description: 'The error body of most routes: a message, and a stable `code` to match on (absent on 401 and on a generic 500)',
    required: ['error'],
    properties: {
      error: { type: 'string', description: 'What went wrong, in words' },
      code: { type: 'string', description: 'Stable machine-readable code, such as insufficient_credits or job_not_found' },
    },
  },
  AgentUnauthorized: {
    type: 'object',
    description: 'The 401 body of the /api/agent/ routes (spec 4.4/4.5)',
    required: ['c', 'm'],
    properties: { c: { type: 'integer', enum: [401] }, m: { type: 'string' } },
  },
  WebhookError: {
    type: 'object',
    description: 'The error envelope of the /api/webhooks routes (spec 7); `bad_request` for every 400',
    required: ['success', 'result', 'message'],
    properties: {
      success: { type: 'boolean', enum: [false] },
      result: { type: 'object', required: ['code'], properties: { code: { type: 'string' } } },
      message: { type: 'string' },
    },
  },
} as const;

export type ErrorSchemaName = keyof typeof ERROR_SCHEMAS;

export function errorSchemaName(path: string, status: number): ErrorSchemaName {
  const family = familyOf(path);
  if (family === ROUTE_FAMILIES.webhook) return 'WebhookError';
  if (family === ROUTE_FAMILIES.agent && status === 401) return 'AgentUnauthorized';
  return 'Error';
}

/** What each status means wherever it is answered; an operation may say more in its own entry. */
export const STATUS_MEANINGS: Record<number, string> = {
  400: 'Bad request: a malformed body or a required field missing',
  401: 'No valid API key (or session token) was given',
  402: 'insufficient_credits: the balance cannot pay for this; top up the account',
  403: 'forbidden: the key\'s role does not allow this',
  404: 'Not found (or not this account\'s)',
  409: 'The resource is not in a state that allows this',
  410: 'Gone: deleted, or its window is over',
  413: 'The body or upload is larger than allowed',
  415: 'Unsupported content type',
  422: 'Invalid request: a field or parameter has a value the route does not accept',
  429: 'Too many requests; Retry-After gives the seconds to wait',
  500: 'Internal server error (logged with its cause; the body says no more)',
  502: 'The lookup failed; nothing was charged, retry',
  503: 'A dependency (the database, the object store or a lookup provider) is unavailable; nothing was charged, retry',
};
