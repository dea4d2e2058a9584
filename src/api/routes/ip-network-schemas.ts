/** JSON Schemas of the IP network routes: what they answer, field by field, nulls included. */

/** Spec 8: other bulk search endpoints take 100 items per request. */
export const MAX_BULK_IPS = 100;

const str = { type: 'string' } as const;
const nstr = { type: ['string', 'null'] } as const;
const int = { type: 'integer' } as const;
const nint = { type: ['integer', 'null'] } as const;
const ints = { type: 'array', items: int } as const;
const day = { type: ['string', 'null'], description: 'YYYY-MM-DD: the day the section\'s source describes; null when it was never imported' } as const;

const object = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({ type: 'object', additionalProperties: false, required, properties }) as const;
const asRef = object({ asn: int, name: nstr });

const SECTIONS = {
  ip: { ...str, description: 'The address in canonical form' },
  network: object({ cidr: nstr, rir: nstr, registrant_org: nstr, allocated_at: nstr, country: nstr, status: nstr, data_as_of: day }),
  asn: object({ asn: nint, origins: ints, as_set: { type: ['array', 'null'], items: int }, name: nstr, country: nstr, data_as_of: day }),
  company: object({ name: nstr, org_id: nstr, country: nstr, data_as_of: day }),
  bgp: object({ prefix: nstr, announced: { type: 'boolean' }, origins: ints, upstreams: { type: 'array', items: asRef }, upstreams_as_of: day, data_as_of: day }),
  routing_history: object({
    snapshots: int,
    first_seen: nstr,
    origin_changes: {
      type: 'array',
      items: object({ date: str, prefix: nstr, origins: ints, previous_prefix: nstr, previous_origins: ints }),
    },
    possible_hijack: { type: 'boolean' },
    hijack: {
      anyOf: [{ type: 'null' }, object({ prefix: str, new_origins: ints, previous_origin: int, covering_prefix: str, since: str })],
    },
    data_as_of: day,
  }),
  peering: object({ peers: { type: 'array', items: asRef }, peer_count: int, provider_count: int, customer_count: int, data_as_of: day }),
  passive_dns: {
    type: 'object',
    additionalProperties: false,
    required: ['status', 'records', 'data_as_of'],
    description: 'Present only when a passive DNS service is configured; `unknown` with a reason when it could not answer',
    properties: { status: { type: 'string', enum: ['ok', 'unknown'] }, reason: str, records: { type: ['array', 'null'], items: {} }, data_as_of: nstr },
  },
} as const;

const REQUIRED = ['ip', 'network', 'asn', 'company', 'bgp', 'routing_history', 'peering'];

export const IP_AGENT_RESPONSE = {
  type: 'object',
  additionalProperties: false,
  required: ['query', 'credits', ...REQUIRED],
  properties: { query: str, credits: int, ...SECTIONS },
} as const;

export const IP_BULK_BODY = {
  type: 'object',
  required: ['queries'],
  additionalProperties: false,
  properties: { queries: { type: 'array', minItems: 1, maxItems: MAX_BULK_IPS, items: { type: 'string', maxLength: 100 } } },
} as const;

export const IP_BULK_RESPONSE = {
  type: 'object',
  additionalProperties: false,
  required: ['results', 'credits_used'],
  properties: {
    results: {
      type: 'array',
      items: {
        anyOf: [
          { type: 'object', additionalProperties: false, required: ['query', 'credits', ...REQUIRED], properties: { query: str, credits: int, ...SECTIONS } },
          object({ query: str, error: object({ code: str, message: str }) }),
        ],
      },
    },
    credits_used: int,
  },
} as const;

/** Open, so that the agent family's `{c, m}` on 401 is sent as it is (as monitor-schemas' errorSchema). */
const errorBody = { type: 'object', additionalProperties: true, properties: { error: str, code: str } } as const;

export const IP_ERROR_RESPONSES = {
  400: { description: 'invalid_request: no `ip`, or malformed JSON; invalid_ip: not one IPv4 or IPv6 address', ...errorBody },
  401: { description: 'No valid API key (the agent route answers `{c: 401, m: ...}`)', ...errorBody },
  402: { description: 'insufficient_credits', ...errorBody },
  422: { description: 'invalid_request: the body does not fit its schema (bulk: 1 to 100 strings in `queries`)', ...errorBody },
  429: { description: 'Rate limited; Retry-After says when to try again', ...errorBody },
  502: { description: 'lookup_failed: the data could not be read; try again (never billed)', ...errorBody },
  503: { description: 'provider_unavailable (never billed)', ...errorBody },
} as const;
