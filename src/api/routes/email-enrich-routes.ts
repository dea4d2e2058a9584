import { setMaxListeners } from 'node:events';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { enrichEmail, type EnrichAnswer } from '../../lookups/enrich/email-enricher.js';
import { checkSyntax } from '../../lookups/validity/syntax.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { applyRateLimit, bearer } from '../authenticate.js';
import { httpError } from '../errors.js';
import { ENRICH_ANSWER } from './email-enrich-schema.js';

const DEADLINE_MS = 20_000;
/** The result cache's kind for enrich reports (never billed: the endpoint is free). */
const ENRICH_KIND = 'enrich';
const REFUSED = { type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' } } } as const;

const DESCRIPTION =
  'Body: `email`. The free enrich report of spec 4.3 (docs/email-enrich-compliance.md): `canonical`, `free_provider`, `mx`; `domain_trust` (SPF with its lookup counts, DMARC and its policy, MTA-STS with the fetched policy, TLS-RPT, DKIM over common selectors, BIMI, DNSSEC, the raw records and a grade A to F); `domain_info` over RDAP; `mail_servers` (address, DNSBL listings, STARTTLS certificate from a recent verification); `footprint` (breaches, Gravatar). Every field is best-effort and may be absent. Free of charge; an API key or a dashboard session. A report is answered from the result cache for `SLUICE_ENRICH_CACHE_SECONDS`, then with `cached: true`.';

/** Spec 4.3: `POST /api/email/validity/enrich`, free, with an API key or a session token. */
export async function emailEnrichRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', async (request: FastifyRequest, reply) => {
    const token = bearer(request);
    const check = await deps.keys.check(token);
    const accountId = check.ok ? check.key.accountId : await deps.sessions.accountFor(token, deps.engine.clock.now());
    if (accountId === undefined) throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    await applyRateLimit(deps, reply, accountId);
  });
  app.post<{ Body: { email?: unknown } }>(
    '/api/email/validity/enrich',
    {
      schema: {
        operationId: 'enrichEmail',
        summary: 'The free enrich report of an email address and its domain',
        tags: ['lookups'],
        description: DESCRIPTION,
        body: { type: 'object', required: ['email'], properties: { email: { type: 'string', description: 'An email address' } } },
        response: {
          200: ENRICH_ANSWER,
          400: { ...REFUSED, description: '`invalid_email`: not an email address' },
          401: { ...REFUSED, description: '`unauthorized`: no valid API key or session' },
          422: { ...REFUSED, description: '`invalid_request`: no `email` string in the body' },
          503: { ...REFUSED, description: '`provider_unavailable`: enrichment is not set up in this process' },
        },
      },
    },
    async (request) => {
      const email = request.body.email;
      if (typeof email !== 'string') throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: email is required');
      if (deps.enrich === undefined) throw httpError(503, ERROR_CODES.providerUnavailable, 'Enrichment is not available');
      const enrich = deps.enrich;
      const syntax = checkSyntax(email);
      if (!syntax.ok) throw httpError(400, ERROR_CODES.invalidEmail, 'Invalid email address');
      // The report says nothing about the caller: one cached copy serves every account.
      const now = deps.engine.clock.now();
      if (enrich.cacheSeconds > 0) {
        const hit = (await deps.engine.results.getMany<EnrichAnswer>(ENRICH_KIND, [syntax.address], now - enrich.cacheSeconds * 1000)).get(syntax.address);
        if (hit !== undefined) return { ...hit, cached: true };
      }
      const deadline = AbortSignal.timeout(DEADLINE_MS);
      // Every DNS query in flight listens on the deadline: the DKIM probe alone asks 24 names at once.
      setMaxListeners(128, deadline);
      const answer = await enrichEmail(enrich, email, deadline);
      if (answer === undefined) throw httpError(400, ERROR_CODES.invalidEmail, 'Invalid email address');
      if (enrich.cacheSeconds > 0) await deps.engine.results.put(ENRICH_KIND, syntax.address, answer, now);
      return answer;
    },
  );
}
