import type { FastifyInstance } from 'fastify';
import { ipNetworkPipeline } from '../../../pipelines/ip-network.js';
import type { ApiDeps } from '../api-deps.js';
import { flatPricedLookupRoutes } from './flat-priced-lookup-routes.js';
import { IP_AGENT_RESPONSE, IP_BULK_BODY, IP_BULK_RESPONSE, IP_ERROR_RESPONSES, MAX_BULK_IPS } from './ip-network-schemas.js';

const AGENT_DESCRIPTION =
  'Body: `ip`, one IPv4 or IPv6 address. Answers the network sections of spec 4.5 from the imported registry (RIR), routing (RouteViews pfx2as), AS name and AS relationship data (docs/ip-network.md): `network`, `asn`, `company`, `bgp`, `routing_history`, `peering`, and `passive_dns` when a passive DNS service is configured. Each section has `data_as_of`, the day its source describes (null: never imported). 1 credit per lookup, repeats included (spec 8).';
const BULK_DESCRIPTION = `Body: \`queries\`, 1 to ${MAX_BULK_IPS} IPv4 or IPv6 addresses. Each result is the single lookup's answer with its \`query\`, or \`error\` {code, message} for an address that is invalid, could not be answered, or could not be paid for. 1 credit per address answered, in order while the balance lasts; errors are free.`;

/** Spec 4.5's IP network lookup and spec 4.7's bulk IP search. */
export async function ipNetworkRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  await flatPricedLookupRoutes(app, deps, {
    pipeline: ipNetworkPipeline,
    field: 'ip',
    fieldMaxLength: 100,
    tag: 'ip',
    single: {
      path: '/api/agent/ip-network',
      operationId: 'ipNetworkLookup',
      summary: 'Who holds an IP address and who routes it',
      description: AGENT_DESCRIPTION,
      response: IP_AGENT_RESPONSE,
    },
    bulk: {
      path: '/api/bulk-ip-search',
      operationId: 'bulkIpSearch',
      summary: 'IP network lookups for up to 100 addresses',
      description: BULK_DESCRIPTION,
      body: IP_BULK_BODY,
      response: IP_BULK_RESPONSE,
    },
    errorResponses: IP_ERROR_RESPONSES,
    name: 'IP network lookup',
    requiredMessage: 'ip is required: an IPv4 or IPv6 address',
    invalidMessage: 'Invalid ip: give one IPv4 or IPv6 address, such as 192.0.2.1 or 2001:db8::1',
    itemFailedMessage: 'the address could not be looked up; try again',
  });
}
