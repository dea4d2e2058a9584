/** The verifier's answer (issue 26), one section per step, so that a reader sees which step decided. */

export const VALIDITY_KIND = 'validity';

export const VALIDITY_STATUSES = { valid: 'valid', invalid: 'invalid', risky: 'risky', unknown: 'unknown' } as const;
export type ValidityStatus = (typeof VALIDITY_STATUSES)[keyof typeof VALIDITY_STATUSES];

/** Every reason an answer may give; docs/email-verification.md explains each. */
export const VALIDITY_REASONS = {
  accepted: 'accepted',
  mailboxNotFound: 'mailbox_not_found',
  mailboxFull: 'mailbox_full',
  mailboxDisabled: 'mailbox_disabled',
  invalidSyntax: 'invalid_syntax',
  noMx: 'no_mx',
  nullMx: 'null_mx',
  invalidDomain: 'invalid_domain',
  catchAll: 'catch_all',
  disposable: 'disposable',
  roleAccount: 'role_account',
  providerAcceptsAll: 'provider_accepts_all',
  policyBlock: 'policy_block',
  greylisted: 'greylisted',
  timeout: 'timeout',
  smtpUnavailable: 'smtp_unavailable',
  dnsUnavailable: 'dns_unavailable',
  probeDisabled: 'probe_disabled',
  blockedAddress: 'blocked_address',
  rejected: 'rejected',
} as const;
export type ValidityReason = (typeof VALIDITY_REASONS)[keyof typeof VALIDITY_REASONS];

/**
 * Reasons of an `unknown` that says nothing about the address, only that a server could not be
 * asked now: free and never cached, so a later lookup asks again (and bills once it resolves).
 */
export const TRANSIENT_REASONS: ReadonlySet<ValidityReason> = new Set([
  VALIDITY_REASONS.greylisted,
  VALIDITY_REASONS.timeout,
  VALIDITY_REASONS.smtpUnavailable,
  VALIDITY_REASONS.dnsUnavailable,
]);

export const VALIDITY_STEPS = { syntax: 'syntax', dns: 'dns', flags: 'flags', smtp: 'smtp', catchAll: 'catch_all' } as const;
export type ValidityStep = (typeof VALIDITY_STEPS)[keyof typeof VALIDITY_STEPS];

export interface ValidityFlags {
  disposable: boolean;
  role_account: boolean;
  free_provider: boolean;
}

export interface TlsEvidence {
  /** TLS version negotiated, e.g. `TLSv1.3`. */
  version: string | null;
  /** Whether the certificate chained to a trusted root for the MX host's name. */
  authorized: boolean;
  /** Why not, as OpenSSL says it (`DEPTH_ZERO_SELF_SIGNED_CERT`), or null. */
  authorization_error: string | null;
  issuer: string | null;
  /** ISO 8601 expiry of the certificate. */
  valid_to: string | null;
}

/** What the RCPT TO of this address got, and from which host: the raw evidence of the verdict. */
export interface SmtpEvidence {
  host: string;
  code: number | null;
  enhanced_code: string | null;
  text: string;
  tls: TlsEvidence | null;
}

export interface ValidityResult {
  email: string;
  status: ValidityStatus;
  reason: ValidityReason;
  /** A provider's own form of the address (Gmail: no dots, no `+tag`), or null. */
  canonical: string | null;
  flags: ValidityFlags;
  /** MX hosts in preference order (the domain itself for an implicit MX). */
  mx: string[];
  smtp: SmtpEvidence | null;
  catch_all: boolean | null;
  /** Steps that ran, in order. */
  checked: ValidityStep[];
}
