/** JSON Schemas of the domain report routes: what they answer, section by section. */

/** Spec 8: other bulk search endpoints take 100 items per request. */
export const MAX_BULK_DOMAINS = 100;

const str = { type: 'string' } as const;
const nstr = { type: ['string', 'null'] } as const;
const int = { type: 'integer' } as const;
const strs = { type: 'array', items: str } as const;
const object = (properties: Record<string, unknown>, required = Object.keys(properties)) => ({ type: 'object', additionalProperties: false, required, properties }) as const;
/** A check the enrich report answers too (SPF, DMARC, MTA-STS, TLS-RPT, BIMI): docs/email-enrich-compliance.md has their fields. */
const check = { type: 'object', additionalProperties: true } as const;

const recordSet = object({ values: strs, error: { type: ['string', 'null'], enum: ['dns_error', null] } });

const SECTIONS = {
  domain: { ...str, description: 'The domain in ASCII, lower case' },
  exists: { type: 'boolean', description: 'False when the name answered NXDOMAIN for every record type' },
  dns: object({ exists: { type: 'boolean' }, A: recordSet, AAAA: recordSet, MX: recordSet, NS: recordSet, TXT: recordSet, CAA: recordSet, SOA: recordSet }),
  email_auth: object({ spf: check, dmarc: check, mta_sts: check, tls_rpt: check, bimi: check, caa: strs }),
  registration: {
    description: 'RDAP registration data (`status: ok`), or why there is none (`unknown` with a reason)',
    anyOf: [
      object({ status: { type: 'string', enum: ['ok'] }, registrar: nstr, created_at: nstr, expires_at: nstr, age_days: { type: ['integer', 'null'] }, nameservers: strs, dnssec: { type: ['boolean', 'null'] }, registrant_country: nstr }),
      object({ status: { type: 'string', enum: ['unknown'] }, reason: str }),
    ],
  },
  company: { description: 'The company directory\'s best match for the domain or a parent of it; null when none', anyOf: [{ type: 'null' }, { type: 'object', additionalProperties: true }] },
  subdomains: {
    description: 'Present only when a certificate-transparency service is configured (SLUICE_CT_URL)',
    anyOf: [
      object({ status: { type: 'string', enum: ['ok'] }, names: { type: 'array', items: object({ name: str, first_seen: str, owner_era: { type: 'string', enum: ['current', 'previous', 'unknown'] } }) } }),
      object({ status: { type: 'string', enum: ['unknown'] }, reason: str, names: { type: 'null' } }),
    ],
  },
  discovery: {
    type: 'array',
    items: object({
      path: str,
      status: { type: 'string', enum: ['found', 'missing', 'error'] },
      http_status: { type: ['integer', 'null'] },
      bytes: { type: ['integer', 'null'] },
      fields: { type: ['object', 'null'], additionalProperties: strs },
      error: nstr,
    }),
  },
  checked_at: str,
} as const;

const REQUIRED = ['domain', 'exists', 'dns', 'email_auth', 'registration', 'company', 'discovery', 'checked_at'];

export const DOMAIN_AGENT_RESPONSE = { type: 'object', additionalProperties: false, required: ['query', 'credits', ...REQUIRED], properties: { query: str, credits: int, ...SECTIONS } } as const;

export const DOMAIN_BULK_BODY = {
  type: 'object',
  required: ['queries'],
  additionalProperties: false,
  properties: { queries: { type: 'array', minItems: 1, maxItems: MAX_BULK_DOMAINS, items: { type: 'string', maxLength: 300 } } },
} as const;

export const DOMAIN_BULK_RESPONSE = {
  type: 'object',
  additionalProperties: false,
  required: ['results', 'credits_used'],
  properties: {
    results: { type: 'array', items: { anyOf: [DOMAIN_AGENT_RESPONSE, object({ query: str, error: object({ code: str, message: str }) })] } },
    credits_used: int,
  },
} as const;

/** Open, so that the agent family's `{c, m}` on 401 is sent as it is (as the IP routes' errors). */
const errorBody = { type: 'object', additionalProperties: true, properties: { error: str, code: str } } as const;

export const DOMAIN_ERROR_RESPONSES = {
  400: { description: 'invalid_request: no `domain`, or malformed JSON; invalid_domain: not a domain name', ...errorBody },
  401: { description: 'No valid API key (the agent route answers `{c: 401, m: ...}`)', ...errorBody },
  402: { description: 'insufficient_credits', ...errorBody },
  422: { description: 'invalid_request: the body does not fit its schema (bulk: 1 to 100 strings in `queries`)', ...errorBody },
  429: { description: 'Rate limited; Retry-After says when to try again', ...errorBody },
  502: { description: 'lookup_failed: the report could not be made; try again (never billed)', ...errorBody },
  503: { description: 'provider_unavailable (never billed)', ...errorBody },
} as const;
