/** The enrich report's response schema (spec 4.3's table): every field optional, as the spec says. */

const S = { type: 'string' } as const;
const NS = { type: ['string', 'null'] } as const;
const NI = { type: ['integer', 'null'] } as const;
const STRINGS = { type: 'array', items: S } as const;
const POLICY = { type: ['string', 'null'], enum: ['none', 'quarantine', 'reject', null] } as const;

const SPF = {
  type: 'object',
  description: 'SPF (RFC 7208): the record, check_host() for the first mail server\'s address, and the DNS-lookup counts against the limits of 10 lookups and 2 void lookups',
  properties: {
    record: NS,
    result: { type: 'string', enum: ['none', 'neutral', 'pass', 'fail', 'softfail', 'temperror', 'permerror'] },
    checked_ip: { ...NS, description: 'The address check_host() ran for; null: none known, the result is the record\'s `all` qualifier' },
    lookups: { type: 'integer' },
    void_lookups: { type: 'integer' },
    lookup_limit: { type: 'integer' },
    void_limit: { type: 'integer' },
    error: { ...NS, description: 'Why a permerror or temperror: too_many_lookups, too_many_void_lookups, multiple_records, macros_not_supported, syntax, dns_error, ...' },
  },
} as const;

const DMARC = {
  type: 'object',
  description: 'DMARC (RFC 7489), with the organisational-domain fallback through the Public Suffix List',
  properties: {
    record: NS,
    found_at: NS,
    policy: POLICY,
    subdomain_policy: POLICY,
    adkim: { type: 'string', enum: ['r', 's'] },
    aspf: { type: 'string', enum: ['r', 's'] },
    pct: { type: 'integer' },
    rua: STRINGS,
    error: NS,
  },
} as const;

const MTA_STS = {
  type: 'object',
  properties: {
    record: NS,
    id: NS,
    policy: {
      type: ['object', 'null'],
      description: 'The policy fetched from https://mta-sts.<domain>/.well-known/mta-sts.txt; null when there is no _mta-sts record',
      properties: { mode: { type: ['string', 'null'], enum: ['enforce', 'testing', 'none', null] }, mx: STRINGS, max_age: NI, error: NS },
    },
    error: NS,
  },
} as const;

const DKIM = {
  type: 'object',
  description: 'Selectors are not discoverable: the listed common ones are probed; `unknown` (never `fail`) when none answers',
  properties: {
    status: { type: 'string', enum: ['found', 'unknown'] },
    selectors: { type: 'array', items: { type: 'object', properties: { selector: S, record: S, key_type: S } } },
    probed: STRINGS,
  },
} as const;

const DOMAIN_TRUST = {
  type: 'object',
  properties: {
    grade: { type: 'string', enum: ['A', 'B', 'C', 'D', 'F'], description: 'The rubric of docs/email-enrich-compliance.md' },
    score: { type: 'integer', description: 'Points out of 100 behind the grade' },
    spf: SPF,
    dmarc: DMARC,
    dmarc_policy: POLICY,
    mta_sts: MTA_STS,
    tls_rpt: { type: 'object', properties: { record: NS, rua: STRINGS, error: NS } },
    dkim: DKIM,
    bimi: { type: 'object', properties: { record: NS, logo_url: NS, authority_url: NS, error: NS } },
    dnssec: { type: 'string', enum: ['secure', 'insecure', 'unknown'], description: 'From the AD flag of a DO-bit query to the configured resolver' },
    records: {
      type: 'object',
      description: 'The raw DNS records behind the fields',
      properties: { mx: STRINGS, txt: STRINGS, dmarc: STRINGS, mta_sts: STRINGS, tls_rpt: STRINGS, bimi: STRINGS, dkim: STRINGS },
    },
  },
} as const;

const DOMAIN_INFO = {
  type: 'object',
  description: 'Registration data over RDAP (IANA bootstrap) and the domain\'s A records',
  properties: { registrar: NS, created_at: NS, expires_at: NS, age_days: NI, nameservers: STRINGS, dnssec: { type: ['boolean', 'null'] }, registrant_country: NS, a: STRINGS },
} as const;

const MAIL_SERVER = {
  type: 'object',
  properties: {
    host: S,
    ip: NS,
    blocklisted: { type: 'boolean' },
    blocklists: { ...STRINGS, description: 'The configured DNSBL zones that list the address' },
    tls_issuer: { ...NS, description: 'From the verifier\'s STARTTLS evidence when the address was verified in the window' },
    tls_expires_at: NS,
    tls_days_left: NI,
    asn: { ...NI, description: 'Origin AS of the address in the latest imported pfx2as snapshot; present only once IP network data is imported' },
    org: { ...NS, description: 'Organisation of that AS (AS names import), else its AS name' },
    country: { ...NS, description: 'Country of the registry delegation holding the address, else of the AS' },
    hosting: { type: ['boolean', 'null'], description: 'true: the AS is in Sluice\'s documented list of hosting/cloud ASNs; null: not known (the list is not exhaustive)' },
  },
} as const;

const FOOTPRINT = {
  type: 'object',
  properties: {
    gravatar_url: S,
    gravatar_profile: { type: 'object', properties: { display_name: NS, profile_url: NS, location: NS } },
    breaches: { type: 'object', properties: { count: { type: 'integer' }, exposed_data: STRINGS, services: STRINGS } },
  },
} as const;

export const ENRICH_ANSWER = {
  description: 'The enrich report: every field best-effort, any may be absent',
  type: 'object',
  required: ['email'],
  properties: {
    email: { type: 'string', description: 'The address, lower-cased' },
    canonical: { type: 'string', description: 'The provider\'s canonical form (Gmail without dots and +tag), else the address' },
    free_provider: { type: 'boolean' },
    mx: { ...STRINGS, description: 'MX hosts in preference order' },
    domain_trust: DOMAIN_TRUST,
    domain_info: DOMAIN_INFO,
    mail_servers: { type: 'array', items: MAIL_SERVER },
    footprint: FOOTPRINT,
    cached: { type: 'boolean', description: 'Present and true only on a cache hit' },
  },
} as const;
