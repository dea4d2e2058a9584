import type { FastifyInstance } from 'fastify';
import { emailBreachesPipeline } from '../../../pipelines/email-breaches.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';

const DESCRIPTION =
  'Body: `email`. Answers the normalised `email` and its `breach_info` from the email breach index (`sluice import breaches` with an `email` column, or the remote email-breach service). 1 credit on the first lookup of an address, 0 for repeats within the repeat-free window (spec 8); `credits` is what this call was billed, `cached` whether the answer came from the result cache.';

const DATE = { type: ['string', 'null'], pattern: '^\\d{4}-\\d{2}-\\d{2}$' } as const;
const NAMES = { type: 'array', items: { type: 'string' } } as const;

const BREACH_INFO = {
  type: 'object',
  required: ['breached', 'count', 'first_breach', 'last_breach', 'services', 'exposed_data', 'breaches'],
  properties: {
    breached: { type: 'boolean', description: 'Whether the address is in at least one known breach' },
    count: { type: 'integer', description: 'How many breaches the address is in' },
    first_breach: { ...DATE, description: 'Date (YYYY-MM-DD) of the earliest dated breach; null when none is dated' },
    last_breach: { ...DATE, description: 'Date of the latest dated breach; null when none is dated' },
    services: { ...NAMES, description: 'Names of the breached services, sorted' },
    exposed_data: { ...NAMES, description: 'Data classes exposed in any of the breaches (such as Passwords), sorted' },
    breaches: {
      type: 'array',
      description: 'The breach history, by date (undated last), then name',
      items: {
        type: 'object',
        required: ['name', 'date', 'data_classes'],
        properties: { name: { type: 'string' }, date: DATE, data_classes: { ...NAMES, description: 'Data exposed in this breach, as the source names it' } },
      },
    },
  },
} as const;

const ANSWER = {
  description: 'The address and its breach history',
  type: 'object',
  required: ['email', 'breach_info', 'credits', 'cached'],
  properties: {
    email: { type: 'string', description: 'The address as looked up: the one address of the input, in lower case' },
    breach_info: BREACH_INFO,
    credits: { type: 'integer', enum: [0, 1], description: '1 on the first lookup of the address, 0 on a repeat within the window' },
    cached: { type: 'boolean', description: 'The answer came from the result cache (a remote provider only); a performance signal, separate from billing' },
  },
} as const;

const REFUSED = { type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' } } } as const;

/** Spec 4.3: the email breach lookup, billed per spec 8 through the same path as the gender lookup. */
export async function emailBreachRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  app.post<{ Body: { email?: unknown } }>(
    '/api/lookup/email/breaches',
    {
      schema: {
        tags: ['lookups'],
        description: DESCRIPTION,
        body: { type: 'object', required: ['email'], properties: { email: { type: 'string', description: 'An email address; a display name around it (`Jane <jane@example.com>`) and `mailto:` are read as in bulk jobs' } } },
        response: {
          200: ANSWER,
          400: { ...REFUSED, description: '`invalid_email`, `empty_value` or `multiple_addresses`: not one email address (free)' },
          402: { ...REFUSED, description: '`insufficient_credits`' },
          422: { ...REFUSED, description: '`invalid_request`: no `email` string in the body' },
          502: { ...REFUSED, description: '`lookup_failed`: not charged' },
          503: { ...REFUSED, description: '`provider_unavailable`: the remote email-breach service is down; not charged' },
        },
      },
    },
    async (request) => {
      const email = request.body.email;
      // The schema has required a string already; this narrows the type for the compiler.
      if (typeof email !== 'string') throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: email is required');
      const answer = await singleLookup(deps.engine, emailBreachesPipeline, request.caller!.accountId, email);
      if (answer.ok) return { email: answer.key, breach_info: answer.result.breach_info, credits: answer.credits, cached: answer.cached };
      switch (answer.reason) {
        case 'invalid':
          throw httpError(400, answer.code as ErrorCode, refusalMessage(answer.code));
        case 'insufficient_credits':
          throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, 'Email breach lookup is temporarily unavailable');
        case 'failed':
          throw httpError(502, ERROR_CODES.lookupFailed, 'Email breach lookup failed. Please try again.');
        default:
          return assertNever(answer);
      }
    },
  );
}

/** `invalid_email` keeps the spec's words; the other refusals say what was wrong and what to send. */
function refusalMessage(code: string): string {
  if (code === ERROR_CODES.multipleAddresses) return 'One email address per lookup: this value holds several; look them up one at a time, or upload them as a bulk job';
  if (code === ERROR_CODES.emptyValue) return 'Email address is empty';
  return 'Invalid email address';
}
