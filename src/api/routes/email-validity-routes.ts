import type { FastifyInstance } from 'fastify';
import { validityPipeline } from '../../../pipelines/validity.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { VALIDITY_REASONS, VALIDITY_STATUSES, VALIDITY_STEPS, TRANSIENT_REASONS, type ValidityReason, type ValidityResult } from '../../lookups/validity/validity-result.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';

const DEFAULT_DEADLINE_MS = 15_000;
/**
 * Seconds to wait before asking again, by transient reason: greylisting servers (postgrey's default
 * delay is 300 s) let the same triplet through after minutes; a time-out or an unreachable host may
 * be back at once.
 */
const RETRY_AFTER_S: Partial<Record<ValidityReason, number>> = {
  [VALIDITY_REASONS.greylisted]: 300,
  [VALIDITY_REASONS.timeout]: 60,
  [VALIDITY_REASONS.smtpUnavailable]: 120,
  [VALIDITY_REASONS.dnsUnavailable]: 60,
};

const DESCRIPTION =
  'Body: `email`. Verifies that the address can receive mail, from DNS and SMTP evidence (docs/email-verification.md): `status` (`valid`, `invalid`, `risky`, `unknown`) and `validity`, its alias for older clients; `reason`; the flags; `canonical`; `mx`; `smtp` (the RCPT reply, the host and TLS); `catch_all`; `checked` (the steps that ran). 1 credit on the first lookup of an address, 0 for repeats within the repeat-free window (spec 8). An `unknown` the verifier could not settle in time (greylisting, time-out, no SMTP reachable, DNS failing) is free, not cached, and carries `retry_after` (seconds); asking again later checks again. Malformed syntax is `invalid` / `invalid_syntax`, free.';

const FLAGS = {
  type: 'object',
  required: ['disposable', 'role_account', 'free_provider'],
  properties: {
    disposable: { type: 'boolean', description: 'The domain is on the disposable-email-domains list' },
    role_account: { type: 'boolean', description: 'The local part (without +tag) is on the role-based-email-addresses list' },
    free_provider: { type: 'boolean', description: 'The domain is on the email-providers list of free mailbox providers' },
  },
} as const;

const TLS = {
  type: ['object', 'null'],
  description: 'STARTTLS, when the server offered it: recorded, not enforced',
  required: ['version', 'authorized', 'authorization_error', 'issuer', 'valid_to'],
  properties: {
    version: { type: ['string', 'null'] },
    authorized: { type: 'boolean', description: 'The certificate chains to a trusted root for the MX name' },
    authorization_error: { type: ['string', 'null'] },
    issuer: { type: ['string', 'null'] },
    valid_to: { type: ['string', 'null'], description: 'ISO 8601 expiry' },
  },
} as const;

const SMTP = {
  type: ['object', 'null'],
  description: 'The RCPT TO reply that decided, and where it came from; null when no SMTP ran',
  required: ['host', 'code', 'enhanced_code', 'text', 'tls'],
  properties: {
    host: { type: 'string' },
    code: { type: ['integer', 'null'], description: 'Reply code; null when no reply came (a dropped or refused connection)' },
    enhanced_code: { type: ['string', 'null'], description: 'RFC 3463 enhanced status code, e.g. 5.1.1' },
    text: { type: 'string' },
    tls: TLS,
  },
} as const;

const STATUS = { type: 'string', enum: Object.values(VALIDITY_STATUSES) } as const;

const ANSWER = {
  description: 'The verdict, its reason and its evidence',
  type: 'object',
  required: ['email', 'status', 'validity', 'reason', 'canonical', 'flags', 'mx', 'smtp', 'catch_all', 'checked', 'credits', 'cached'],
  properties: {
    email: { type: 'string', description: 'The normalised address' },
    status: STATUS,
    validity: { ...STATUS, description: 'Alias of status, for older clients (spec 4.3)' },
    reason: { type: 'string', enum: Object.values(VALIDITY_REASONS) },
    canonical: { type: ['string', 'null'], description: 'The provider\'s own form of the address where one is documented (Gmail), else null' },
    flags: FLAGS,
    mx: { type: 'array', items: { type: 'string' }, description: 'MX hosts in preference order (the domain itself for an implicit MX)' },
    smtp: SMTP,
    catch_all: { type: ['boolean', 'null'], description: 'Whether the domain accepts any recipient; null when not known' },
    checked: { type: 'array', items: { type: 'string', enum: Object.values(VALIDITY_STEPS) }, description: 'The steps that ran, in order' },
    credits: { type: 'integer', enum: [0, 1], description: '1 on the first settled lookup of the address; 0 on repeats, invalid syntax and unsettled answers' },
    cached: { type: 'boolean', description: 'The answer came from the result cache; a performance signal, separate from billing' },
    retry_after: { type: 'integer', description: 'Only on an unsettled `unknown`: seconds after which asking again may settle it' },
  },
} as const;

const REFUSED = { type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' } } } as const;

/** Spec 4.3: email validity, billed per spec 8 through the single-lookup path every lookup shares. */
export async function emailValidityRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  app.post<{ Body: { email?: unknown } }>(
    '/api/lookup/email/validity',
    {
      schema: {
        operationId: 'verifyEmailValidity',
        summary: 'Verify that an email address can receive mail',
        tags: ['lookups'],
        description: DESCRIPTION,
        body: { type: 'object', required: ['email'], properties: { email: { type: 'string', description: 'An email address; a display name around it and `mailto:` are read as in bulk jobs' } } },
        response: {
          200: ANSWER,
          400: { ...REFUSED, description: '`empty_value` or `multiple_addresses`: not one email address (free)' },
          402: { ...REFUSED, description: '`insufficient_credits`' },
          422: { ...REFUSED, description: '`invalid_request`: no `email` string in the body' },
          502: { ...REFUSED, description: '`lookup_failed`: not charged' },
          503: { ...REFUSED, description: '`provider_unavailable`: email verification is not available here; not charged' },
        },
      },
    },
    async (request) => {
      const email = request.body.email;
      if (typeof email !== 'string') throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: email is required');
      const deadline = AbortSignal.timeout(deps.settings.validityDeadlineMs ?? DEFAULT_DEADLINE_MS);
      const answer = await singleLookup(deps.engine, validityPipeline, request.caller!.accountId, email, 'repeat_free', { signal: deadline });
      if (answer.ok) return respond(answer.result, answer.credits, answer.cached);
      switch (answer.reason) {
        case 'invalid':
          if (answer.code === ERROR_CODES.invalidEmail) return respond(invalidSyntax(email), 0, false);
          throw httpError(400, answer.code as ErrorCode, 'Invalid email address');
        case 'insufficient_credits':
          throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, 'Email verification is temporarily unavailable');
        case 'failed': {
          const partial = (answer.outcome as { partial?: ValidityResult } | undefined)?.partial;
          if (partial !== undefined && TRANSIENT_REASONS.has(answer.code as ValidityReason)) {
            return { ...respond(partial, 0, false), retry_after: RETRY_AFTER_S[answer.code as ValidityReason] ?? 60 };
          }
          throw httpError(502, ERROR_CODES.lookupFailed, 'Email verification failed. Please try again.');
        }
        default:
          return assertNever(answer);
      }
    },
  );
}

function respond(result: ValidityResult, credits: number, cached: boolean) {
  return { ...result, validity: result.status, credits, cached };
}

function invalidSyntax(email: string): ValidityResult {
  return {
    email: email.trim().slice(0, 320),
    status: VALIDITY_STATUSES.invalid,
    reason: VALIDITY_REASONS.invalidSyntax,
    canonical: null,
    flags: { disposable: false, role_account: false, free_provider: false },
    mx: [],
    smtp: null,
    catch_all: null,
    checked: [VALIDITY_STEPS.syntax],
  };
}
