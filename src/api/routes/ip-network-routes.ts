import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { ipNetworkPipeline } from '../../../pipelines/ip-network.js';
import { lookupBatch } from '../../jobs/lookup-batch.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { IP_NETWORK_KIND } from '../../lookups/ip/embedded-ip-network.js';
import type { IpNetworkResult } from '../../lookups/ip/ip-network-answer.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';
import { IP_AGENT_RESPONSE, IP_BULK_BODY, IP_BULK_RESPONSE, IP_ERROR_RESPONSES, MAX_BULK_IPS } from './ip-network-schemas.js';

const AGENT_DESCRIPTION =
  'Body: `ip`, one IPv4 or IPv6 address. Answers the network sections of spec 4.5 from the imported registry (RIR), routing (RouteViews pfx2as), AS name and AS relationship data (docs/ip-network.md): `network`, `asn`, `company`, `bgp`, `routing_history`, `peering`, and `passive_dns` when a passive DNS service is configured. Each section has `data_as_of`, the day its source describes (null: never imported). 1 credit per lookup, repeats included (spec 8).';
const BULK_DESCRIPTION = `Body: \`queries\`, 1 to ${MAX_BULK_IPS} IPv4 or IPv6 addresses. Each result is the single lookup's answer with its \`query\`, or \`error\` {code, message} for an address that is invalid, could not be answered, or could not be paid for. 1 credit per address answered, in order while the balance lasts; errors are free.`;

const insufficient = () => httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');

/** Spec 4.5's IP network lookup and spec 4.7's bulk IP search. */
export async function ipNetworkRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));

  app.post<{ Body: { ip?: unknown } }>(
    '/api/agent/ip-network',
    {
      schema: {
        operationId: 'ipNetworkLookup',
        summary: 'Who holds an IP address and who routes it',
        description: AGENT_DESCRIPTION,
        tags: ['ip'],
        body: { type: 'object', properties: { ip: { type: 'string', maxLength: 100 } } },
        response: { 200: IP_AGENT_RESPONSE, ...IP_ERROR_RESPONSES },
      },
    },
    async (request) => {
      const ip = request.body?.ip;
      if (typeof ip !== 'string' || ip.trim() === '') throw httpError(400, ERROR_CODES.invalidRequest, 'ip is required: an IPv4 or IPv6 address');
      const answer = await singleLookup(deps.engine, ipNetworkPipeline, request.caller!.accountId, ip, 'per_call');
      if (answer.ok) return { query: ip, ...answer.result, credits: answer.credits };
      switch (answer.reason) {
        case 'invalid':
          throw httpError(400, answer.code as ErrorCode, 'Invalid ip: give one IPv4 or IPv6 address, such as 192.0.2.1 or 2001:db8::1');
        case 'insufficient_credits':
          throw insufficient();
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, 'IP network lookup is temporarily unavailable');
        case 'failed':
          throw httpError(502, ERROR_CODES.lookupFailed, 'IP network lookup failed. Please try again.');
        default:
          return assertNever(answer);
      }
    },
  );

  app.post<{ Body: { queries: string[] } }>(
    '/api/bulk-ip-search',
    {
      schema: {
        operationId: 'bulkIpSearch',
        summary: 'IP network lookups for up to 100 addresses',
        description: BULK_DESCRIPTION,
        tags: ['ip'],
        body: IP_BULK_BODY,
        response: { 200: IP_BULK_RESPONSE, ...IP_ERROR_RESPONSES },
      },
    },
    async (request) => {
      const accountId = request.caller!.accountId;
      const { queries } = request.body;
      const engine = deps.engine;
      if ((await engine.billing.available(accountId)) <= 0) throw insufficient();
      const provider = engine.providers.get(IP_NETWORK_KIND);
      if (!provider) throw httpError(503, ERROR_CODES.providerUnavailable, 'IP network lookup is temporarily unavailable');
      const normalised = queries.map((q) => ipNetworkPipeline.normalise(q));
      const keys = [...new Set(normalised.flatMap((n) => (n.ok ? [n.key] : [])))];
      const outcomes = keys.length === 0 ? new Map() : await lookupBatch(keys, { accountId, provider, limiters: engine.limiters });
      // Paid in order while the balance lasts, in one charge: a 402 mid-list costs the items before it only.
      const available = await engine.billing.available(accountId);
      let paid = 0;
      const results = queries.map((query, i) => {
        const n = normalised[i]!;
        if (!n.ok) return { query, error: { code: n.code, message: n.message } };
        const outcome = outcomes.get(n.key)!;
        if (!outcome.ok) return { query, error: { code: outcome.code, message: 'the address could not be looked up; try again' } };
        if (paid >= available) return { query, error: { code: ERROR_CODES.insufficientCredits, message: 'Insufficient credits. Please top up your account.' } };
        paid++;
        return { query, ...(outcome.result as IpNetworkResult), credits: 1 };
      });
      if (paid > 0) {
        const charged = await engine.billing.commitLookup({ accountId, kind: IP_NETWORK_KIND, charge: { type: 'flat', amount: paid, callId: randomUUID() }, cache: [], now: engine.clock.now() });
        if (!charged.ok) throw insufficient();
      }
      return { results, credits_used: paid };
    },
  );
}
