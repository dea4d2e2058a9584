import type { FastifyInstance } from 'fastify';
import { domainPipeline } from '../../../pipelines/domain.js';
import type { ApiDeps } from '../api-deps.js';
import { DOMAIN_AGENT_RESPONSE, DOMAIN_BULK_BODY, DOMAIN_BULK_RESPONSE, DOMAIN_ERROR_RESPONSES, MAX_BULK_DOMAINS } from './domain-report-schemas.js';
import { flatPricedLookupRoutes } from './flat-priced-lookup-routes.js';

const AGENT_DESCRIPTION =
  'Body: `domain`, one domain name (a URL is read for its host). Answers the domain report (docs/domain-report.md): DNS records (A, AAAA, MX, NS, TXT, CAA, SOA), the email-authentication records (SPF, DMARC, MTA-STS, TLS-RPT, BIMI), RDAP registration data, the company from the directory, subdomains from certificate transparency when a CT service is configured, and the agent-readiness discovery files. Every part is best-effort and says inside itself what failed. 1 credit per lookup, repeats included, as the IP network lookup (spec 8 names no price of its own for domain search).';
const BULK_DESCRIPTION = `Body: \`queries\`, 1 to ${MAX_BULK_DOMAINS} domain names. Each result is the single lookup's answer with its \`query\`, or \`error\` {code, message} for a name that is invalid, could not be reported on, or could not be paid for. 1 credit per domain answered, in order while the balance lasts; errors are free.`;

/** The domain search of spec 4.5 (path chosen here: the spec shows only the bulk one) and spec 4.7's bulk domain search. */
export async function domainReportRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  await flatPricedLookupRoutes(app, deps, {
    pipeline: domainPipeline,
    field: 'domain',
    fieldMaxLength: 300,
    tag: 'domain',
    single: {
      path: '/api/agent/domain',
      operationId: 'domainReport',
      summary: 'A domain report: DNS, mail authentication, registration, subdomains, discovery files',
      description: AGENT_DESCRIPTION,
      response: DOMAIN_AGENT_RESPONSE,
    },
    bulk: {
      path: '/api/bulk-domain-search',
      operationId: 'bulkDomainSearch',
      summary: 'Domain reports for up to 100 domains',
      description: BULK_DESCRIPTION,
      body: DOMAIN_BULK_BODY,
      response: DOMAIN_BULK_RESPONSE,
    },
    errorResponses: DOMAIN_ERROR_RESPONSES,
    name: 'Domain report',
    requiredMessage: 'domain is required: a domain name such as example.com',
    invalidMessage: 'Invalid domain: give one domain name, such as example.com',
    itemFailedMessage: 'the domain could not be reported on; try again',
  });
}
