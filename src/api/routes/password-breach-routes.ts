import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { passwordBreachesPipeline } from '../../../pipelines/password-breaches.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { PASSWORD_BREACHES_KIND, PasswordBreachProvider } from '../../lookups/password/password-breach-provider.js';
import { RANGE_SOURCES } from '../../lookups/password/password-range-source.js';
import { padRange, PADDED_MIN_ROWS, rangeBody } from '../../lookups/password/range-padding.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';

/** Longer than any password a person types; a bound so that a body cannot make Sluice hash megabytes. */
const MAX_PASSWORD_LENGTH = 1_024;

const CHECK_DESCRIPTION =
  'Body: exactly one of `password` (hashed here with SHA-1 over its UTF-8 bytes, as given: no trimming, no Unicode normalisation) or `sha1` (the 40 hex digits of a SHA-1 the client computed, so that the password never reaches Sluice at all). Only the first 5 hex digits of the SHA-1 ever leave Sluice (to SLUICE_PASSWORD_RANGE_URL, when set); the rest is compared here. The password and its SHA-1 are neither logged nor stored: billing keeps a keyed hash of the SHA-1, the result cache is not used and no `lookup.completed` event is sent. 1 credit on the first check of a password, 0 for repeats within the repeat-free window (spec 8).';

const ANSWER = {
  description: 'Whether the password is in a known breach, how often, and how that was checked',
  type: 'object',
  required: ['breached', 'count', 'source', 'prefix', 'credits', 'cached'],
  properties: {
    breached: { type: 'boolean', description: 'The password appears in at least one breach' },
    count: { type: 'integer', minimum: 0, description: 'Times the password was seen in breaches (0 when not breached)' },
    source: { type: 'string', enum: Object.values(RANGE_SOURCES), description: '`local_index`: the range index in this deployment; `remote_range`: the range service of SLUICE_PASSWORD_RANGE_URL' },
    prefix: { type: 'string', pattern: '^[0-9A-F]{5}$', description: 'The 5 hex digits of the SHA-1 that the range was asked for: all that any range source was given' },
    credits: { type: 'integer', enum: [0, 1], description: '1 on the first check of the password, 0 on a repeat within the window' },
    cached: { type: 'boolean', enum: [false], description: 'Always false: answers about passwords are never cached' },
  },
} as const;

const REFUSED = { type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' } } } as const;

const RANGE_DESCRIPTION = `The k-anonymity range protocol of Have I Been Pwned, served from this deployment's source (the imported index, or the remote range service it is configured with): every SHA-1 that begins with the 5 hex digits of the path, as \`SUFFIX:COUNT\` lines (35 uppercase hex digits, a colon, the count) joined by CRLF. Padded by default to at least ${PADDED_MIN_ROWS} rows with random suffixes of count 0 (drop them); \`Add-Padding: false\` turns that off. A client that hashes the password itself and compares the suffix sends Sluice nothing but the prefix. API key required; free (no credit), counted against the key's rate limit.`;

/** Spec 4.3's password breach check, and the range protocol that lets a client check without sending the password. */
export async function passwordBreachRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));

  app.post<{ Body: { password?: unknown; sha1?: unknown } }>(
    '/api/lookup/email/password/breaches',
    {
      schema: {
        operationId: 'checkPasswordBreaches',
        summary: 'Check a password against breaches by k-anonymity',
        tags: ['lookups'],
        description: CHECK_DESCRIPTION,
        body: {
          type: 'object',
          properties: {
            password: { type: 'string', maxLength: MAX_PASSWORD_LENGTH, description: 'The password, as typed' },
            sha1: { type: 'string', maxLength: 64, description: "The password's SHA-1, 40 hex digits in either case" },
          },
        },
        response: {
          200: ANSWER,
          400: { ...REFUSED, description: '`empty_value` (an empty password or SHA-1) or `invalid_sha1` (not 40 hex digits); free' },
          402: { ...REFUSED, description: '`insufficient_credits`' },
          422: { ...REFUSED, description: '`invalid_request`: neither or both of `password` and `sha1`, or not strings' },
          502: { ...REFUSED, description: '`lookup_failed`: the range could not be read; not charged' },
          503: { ...REFUSED, description: '`provider_unavailable`: no index imported and no range service set, or the service is down; not charged' },
        },
      },
    },
    async (request) => {
      const { password, sha1 } = request.body;
      if ((password === undefined) === (sha1 === undefined)) throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: give exactly one of password and sha1');
      if (password !== undefined && typeof password !== 'string') throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: password must be a string');
      if (sha1 !== undefined && typeof sha1 !== 'string') throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: sha1 must be a string');
      if (password === '') throw httpError(400, ERROR_CODES.emptyValue, 'The password is empty');
      const raw = typeof password === 'string' ? createHash('sha1').update(password, 'utf8').digest('hex') : (sha1 as string);
      const answer = await singleLookup(deps.engine, passwordBreachesPipeline, request.caller!.accountId, raw, 'repeat_free', { announce: false });
      if (answer.ok) return { ...answer.result, credits: answer.credits, cached: false };
      switch (answer.reason) {
        case 'invalid':
          throw httpError(400, answer.code as ErrorCode, answer.code === ERROR_CODES.emptyValue ? 'The SHA-1 is empty' : 'A SHA-1 is 40 hex digits');
        case 'insufficient_credits':
          throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, 'Password breach check is unavailable: no range index or range service');
        case 'failed':
          throw httpError(502, ERROR_CODES.lookupFailed, 'Password breach check failed. Please try again.');
        default:
          return assertNever(answer);
      }
    },
  );

  app.get<{ Params: { prefix: string } }>(
    '/api/range/:prefix',
    {
      schema: {
        operationId: 'getPasswordRange',
        summary: 'The SHA-1 suffixes of a 5-hex prefix (k-anonymity range)',
        tags: ['lookups'],
        description: RANGE_DESCRIPTION,
        params: { type: 'object', required: ['prefix'], properties: { prefix: { type: 'string', description: '5 hex digits, either case' } } },
        headers: { type: 'object', properties: { 'add-padding': { type: 'string', description: '`false`: no padding rows; anything else, or none: padded' } } },
        response: {
          200: { description: '`SUFFIX:COUNT` lines joined by CRLF (text/plain)', type: 'string' },
          400: { ...REFUSED, description: '`invalid_prefix`: not 5 hex digits' },
          502: { ...REFUSED, description: '`lookup_failed`: the range could not be read' },
          503: { ...REFUSED, description: '`provider_unavailable`: no index imported and no range service set, or the service is down' },
        },
      },
    },
    async (request, reply) => {
      const { prefix } = request.params;
      if (!/^[0-9A-Fa-f]{5}$/.test(prefix)) throw httpError(400, ERROR_CODES.invalidPrefix, 'A range prefix is 5 hex digits');
      const provider = deps.engine.providers.get(PASSWORD_BREACHES_KIND);
      if (!(provider instanceof PasswordBreachProvider)) throw httpError(503, ERROR_CODES.providerUnavailable, 'Password ranges are not served here');
      const range = await provider.source.range(prefix.toUpperCase());
      if (!range.ok) {
        if (range.code === ERROR_CODES.providerUnavailable) throw httpError(503, ERROR_CODES.providerUnavailable, 'Password ranges are unavailable: no range index or range service');
        throw httpError(502, ERROR_CODES.lookupFailed, 'The range could not be read. Please try again.');
      }
      const padded = request.headers['add-padding'] !== 'false';
      reply.header('Content-Type', 'text/plain; charset=utf-8');
      // A range is the same for everyone who asks; padding is drawn afresh, so a shared cache must not keep it.
      reply.header('Cache-Control', 'private, no-store');
      return rangeBody(padded ? padRange(range.rows) : range.rows);
    },
  );
}
