import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { domainPipeline } from '../../../pipelines/domain.js';
import { lookupBatch } from '../../jobs/lookup-batch.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { DOMAIN_REPORT_KIND, type DomainReport } from '../../lookups/domain/domain-report.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';
import { DOMAIN_AGENT_RESPONSE, DOMAIN_BULK_BODY, DOMAIN_BULK_RESPONSE, DOMAIN_ERROR_RESPONSES, MAX_BULK_DOMAINS } from './domain-report-schemas.js';

const AGENT_DESCRIPTION =
  'Body: `domain`, one domain name (a URL is read for its host). Answers the domain report (docs/domain-report.md): DNS records (A, AAAA, MX, NS, TXT, CAA, SOA), the email-authentication records (SPF, DMARC, MTA-STS, TLS-RPT, BIMI), RDAP registration data, the company from the directory, subdomains from certificate transparency when a CT service is configured, and the agent-readiness discovery files. Every part is best-effort and says inside itself what failed. 1 credit per lookup, repeats included, as the IP network lookup (spec 8 names no price of its own for domain search).';
const BULK_DESCRIPTION = `Body: \`queries\`, 1 to ${MAX_BULK_DOMAINS} domain names. Each result is the single lookup's answer with its \`query\`, or \`error\` {code, message} for a name that is invalid, could not be reported on, or could not be paid for. 1 credit per domain answered, in order while the balance lasts; errors are free.`;

const insufficient = () => httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');

/** The domain search of spec 4.5 (path chosen here: the spec shows only the bulk one) and spec 4.7's bulk domain search. */
export async function domainReportRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));

  app.post<{ Body: { domain?: unknown } }>(
    '/api/agent/domain',
    {
      schema: {
        operationId: 'domainReport',
        summary: 'A domain report: DNS, mail authentication, registration, subdomains, discovery files',
        description: AGENT_DESCRIPTION,
        tags: ['domain'],
        body: { type: 'object', properties: { domain: { type: 'string', maxLength: 300 } } },
        response: { 200: DOMAIN_AGENT_RESPONSE, ...DOMAIN_ERROR_RESPONSES },
      },
    },
    async (request) => {
      const domain = request.body?.domain;
      if (typeof domain !== 'string' || domain.trim() === '') throw httpError(400, ERROR_CODES.invalidRequest, 'domain is required: a domain name such as example.com');
      const answer = await singleLookup(deps.engine, domainPipeline, request.caller!.accountId, domain, 'per_call');
      if (answer.ok) return { query: domain, ...answer.result, credits: answer.credits };
      switch (answer.reason) {
        case 'invalid':
          throw httpError(400, answer.code as ErrorCode, 'Invalid domain: give one domain name, such as example.com');
        case 'insufficient_credits':
          throw insufficient();
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, 'Domain report is temporarily unavailable');
        case 'failed':
          throw httpError(502, ERROR_CODES.lookupFailed, 'Domain report failed. Please try again.');
        default:
          return assertNever(answer);
      }
    },
  );

  app.post<{ Body: { queries: string[] } }>(
    '/api/bulk-domain-search',
    {
      schema: {
        operationId: 'bulkDomainSearch',
        summary: 'Domain reports for up to 100 domains',
        description: BULK_DESCRIPTION,
        tags: ['domain'],
        body: DOMAIN_BULK_BODY,
        response: { 200: DOMAIN_BULK_RESPONSE, ...DOMAIN_ERROR_RESPONSES },
      },
    },
    async (request) => {
      const accountId = request.caller!.accountId;
      const { queries } = request.body;
      const engine = deps.engine;
      if ((await engine.billing.available(accountId)) <= 0) throw insufficient();
      const provider = engine.providers.get(DOMAIN_REPORT_KIND);
      if (!provider) throw httpError(503, ERROR_CODES.providerUnavailable, 'Domain report is temporarily unavailable');
      const normalised = queries.map((q) => domainPipeline.normalise(q));
      const keys = [...new Set(normalised.flatMap((n) => (n.ok ? [n.key] : [])))];
      const outcomes = keys.length === 0 ? new Map() : await lookupBatch(keys, { accountId, provider, limiters: engine.limiters });
      // Paid in order while the balance lasts, in one charge: a short balance costs the items before it only.
      const available = await engine.billing.available(accountId);
      let paid = 0;
      const results = queries.map((query, i) => {
        const n = normalised[i]!;
        if (!n.ok) return { query, error: { code: n.code, message: n.message } };
        const outcome = outcomes.get(n.key)!;
        if (!outcome.ok) return { query, error: { code: outcome.code, message: 'the domain could not be reported on; try again' } };
        if (paid >= available) return { query, error: { code: ERROR_CODES.insufficientCredits, message: 'Insufficient credits. Please top up your account.' } };
        paid++;
        return { query, ...(outcome.result as DomainReport), credits: 1 };
      });
      if (paid > 0) {
        const charged = await engine.billing.commitLookup({ accountId, kind: DOMAIN_REPORT_KIND, charge: { type: 'flat', amount: paid, callId: randomUUID() }, cache: [], now: engine.clock.now() });
        if (!charged.ok) throw insufficient();
      }
      return { results, credits_used: paid };
    },
  );
}
