import type { FastifyInstance } from 'fastify';
import { genderPipeline } from '../../../pipelines/gender.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';

export const GENDER_PATHS = ['/api/email/gender', '/api/lookup/email/gender'] as const;

/** Spec 4.3 and 7: the gender lookup, with exactly the spec's fields and error texts. */
export async function genderRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  // onRequest: the key is checked (and the request counted) before the body is even read.
  app.addHook('onRequest', keyAuth(deps));
  for (const url of GENDER_PATHS) {
    app.post<{ Body: { email?: unknown } }>(url, { schema: { tags: ['lookups'], body: { type: 'object', properties: { email: {} } } } }, async (request) => {
      const email = request.body?.email;
      if (typeof email !== 'string') throw httpError(400, ERROR_CODES.invalidRequest, 'Invalid request body');
      const answer = await singleLookup(deps.engine, genderPipeline, request.caller!.accountId, email);
      if (answer.ok) {
        return {
          email: answer.key,
          gender: answer.result.gender,
          country: answer.result.country,
          probability: answer.result.probability,
          credits: answer.credits,
          ...(answer.cached ? { cached: true } : {}),
        };
      }
      switch (answer.reason) {
        case 'invalid':
          throw httpError(400, ERROR_CODES.invalidEmail, 'Invalid email address');
        case 'insufficient_credits':
          throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, 'Gender lookup is temporarily unavailable');
        case 'failed':
          throw httpError(502, ERROR_CODES.lookupFailed, 'Gender lookup failed. Please try again.');
        default:
          return assertNever(answer);
      }
    });
  }
}
