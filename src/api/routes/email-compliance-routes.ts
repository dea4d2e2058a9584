import type { FastifyInstance } from 'fastify';
import { complianceLookup } from '../../jobs/compliance-lookup.js';
import { COMPLIANCE_RULES } from '../../lookups/compliance/compliance-rules.js';
import { COMPLIANCE_VERDICTS, NOT_LEGAL_ADVICE } from '../../lookups/compliance/compliance-verdict.js';
import { mailServerCountry } from '../../lookups/enrich/mail-server-network.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';

const DEFAULT_DEADLINE_MS = 15_000;
const REFUSED = { type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' } } } as const;
const NS = { type: ['string', 'null'] } as const;

const DESCRIPTION = `Body: \`email\`. A legal-to-email verdict and the laws that apply (docs/email-enrich-compliance.md has the rule table): \`verdict\` (${Object.values(COMPLIANCE_VERDICTS).join(', ')}), \`legal_to_email\`, the \`countries\` the signals name, the \`laws\`, the \`reasons\`, the \`signals\` and a \`disclaimer\`. While the verifier is still working (a greylisting or slow mail server) the verdict is provisional: \`checking: true\` and a \`result_id\`; asking again gives the settled verdict, free within the repeat-free window. \`checking\` and \`result_id\` are absent when false or 0. 1 credit on the first lookup of an address. No webhook event. ${NOT_LEGAL_ADVICE}`;

const ANSWER = {
  description: 'The verdict, the laws and the reasons',
  type: 'object',
  required: ['email', 'verdict', 'legal_to_email', 'countries', 'laws', 'reasons', 'signals', 'disclaimer', 'credits'],
  properties: {
    email: { type: 'string' },
    verdict: { type: 'string', enum: Object.values(COMPLIANCE_VERDICTS) },
    legal_to_email: { type: ['boolean', 'null'], description: 'true: may be emailed without prior consent; false: must not be; null: only with consent' },
    countries: {
      type: 'array',
      items: { type: 'object', required: ['country', 'source'], properties: { country: { type: 'string' }, source: { type: 'string', enum: ['cctld', 'registration', 'mail_server'] } } },
    },
    laws: {
      type: 'array',
      items: {
        type: 'object',
        required: ['id', 'name', 'jurisdiction', 'regime', 'requirements'],
        properties: {
          id: { type: 'string', enum: COMPLIANCE_RULES.map((r) => r.id) },
          name: { type: 'string' },
          jurisdiction: { type: 'string' },
          regime: { type: 'string', enum: ['opt_in', 'opt_out'] },
          requirements: { type: 'array', items: { type: 'string' } },
        },
      },
    },
    reasons: { type: 'array', items: { type: 'string' } },
    signals: {
      type: 'object',
      properties: {
        cctld_country: NS,
        registration_country: NS,
        mail_server_country: NS,
        role_account: { type: 'boolean' },
        disposable: { type: 'boolean' },
        free_provider: { type: 'boolean' },
        deliverability: { type: ['string', 'null'], enum: ['valid', 'invalid', 'risky', 'unknown', null] },
      },
    },
    disclaimer: { type: 'string' },
    credits: { type: 'integer', enum: [0, 1] },
    checking: { type: 'boolean', description: 'Present and true while the verifier is still working: the verdict is provisional' },
    result_id: { type: 'integer', description: 'The stored check; present only with `checking`' },
  },
} as const;

/** Spec 4.3: `POST /api/lookup/email/compliance`. */
export async function emailComplianceRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  app.post<{ Body: { email?: unknown } }>(
    '/api/lookup/email/compliance',
    {
      schema: {
        operationId: 'emailCompliance',
        summary: 'Whether an address may be emailed, and under which laws',
        tags: ['lookups'],
        description: DESCRIPTION,
        body: { type: 'object', required: ['email'], properties: { email: { type: 'string', description: 'An email address' } } },
        response: {
          200: ANSWER,
          400: { ...REFUSED, description: '`invalid_email`: not an email address (free)' },
          402: { ...REFUSED, description: '`insufficient_credits`' },
          422: { ...REFUSED, description: '`invalid_request`: no `email` string in the body' },
          503: { ...REFUSED, description: '`provider_unavailable`: email verification is not available here; not charged' },
        },
      },
    },
    async (request) => {
      const email = request.body.email;
      if (typeof email !== 'string') throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: email is required');
      const deadline = AbortSignal.timeout(deps.settings.validityDeadlineMs ?? DEFAULT_DEADLINE_MS);
      const rdap = deps.enrich?.rdap;
      const enrich = deps.enrich;
      const network = enrich?.ipNetwork;
      const mailCountry = enrich && network ? (domain: string, signal?: AbortSignal) => mailServerCountry(enrich.resolver, network, domain, signal) : undefined;
      const result = await complianceLookup({ engine: deps.engine, registration: rdap ? (domain, signal) => rdap.lookup(domain, signal) : undefined, mailServerCountry: mailCountry }, request.caller!.accountId, email, deadline);
      if (result.ok) return result.answer;
      if (result.reason === 'invalid') throw httpError(400, ERROR_CODES.invalidEmail, 'Invalid email address');
      if (result.reason === 'insufficient_credits') throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
      throw httpError(503, ERROR_CODES.providerUnavailable, 'Email verification is temporarily unavailable');
    },
  );
}
