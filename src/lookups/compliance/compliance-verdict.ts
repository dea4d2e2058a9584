import { rulesFor, type ComplianceRule } from './compliance-rules.js';

export const NOT_LEGAL_ADVICE =
  'This verdict is an automated reading of public signals (the domain, its registration, the address type and its deliverability) against a fixed rule table. It is not legal advice: it cannot see your relationship with the recipient, your consent records or where the person lives. Ask a lawyer about your own case.';

export const COMPLIANCE_VERDICTS = { allowed: 'allowed', consentRequired: 'consent_required', doNotEmail: 'do_not_email' } as const;
export type ComplianceVerdictValue = (typeof COMPLIANCE_VERDICTS)[keyof typeof COMPLIANCE_VERDICTS];

export interface ComplianceSignals {
  cctld_country: string | null;
  registration_country: string | null;
  /** From imported IP network data (the first MX, in preference order, with a known country); null without it. */
  mail_server_country: string | null;
  role_account: boolean;
  disposable: boolean;
  free_provider: boolean;
  /** The verifier's status; null while it has not settled. */
  deliverability: 'valid' | 'invalid' | 'risky' | 'unknown' | null;
}

export interface ComplianceVerdict {
  verdict: ComplianceVerdictValue;
  /** true: may be emailed without prior consent; false: must not be; null: only with consent. */
  legal_to_email: boolean | null;
  countries: { country: string; source: 'cctld' | 'registration' | 'mail_server' }[];
  laws: { id: string; name: string; jurisdiction: string; regime: ComplianceRule['regime']; requirements: readonly string[] }[];
  reasons: string[];
  signals: ComplianceSignals;
  disclaimer: string;
}

/**
 * The verdict from the signals: every law of every country a signal names applies (a sender
 * cannot tell which one the recipient lives under, so the strictest decides). An address that
 * cannot receive mail is `do_not_email` whatever the law; no country signal at all is
 * `consent_required`, the rule in most of the world.
 */
export function complianceVerdict(s: ComplianceSignals): ComplianceVerdict {
  const countries: ComplianceVerdict['countries'] = [];
  const add = (country: string | null, source: ComplianceVerdict['countries'][number]['source']) => {
    if (country !== null && !countries.some((c) => c.country === country)) countries.push({ country, source });
  };
  add(s.cctld_country, 'cctld');
  add(s.registration_country, 'registration');
  add(s.mail_server_country, 'mail_server');
  const rules = [...new Map(countries.flatMap((c) => rulesFor(c.country)).map((r) => [r.id, r])).values()];
  const laws = rules.map(({ id, name, jurisdiction, regime, requirements }) => ({ id, name, jurisdiction, regime, requirements }));
  const reasons: string[] = [];
  const corporate = s.role_account && !s.free_provider;
  if (s.deliverability === null) reasons.push('deliverability_pending');
  if (s.disposable) reasons.push('disposable_address');
  if (s.role_account) reasons.push('role_account');
  if (countries.length === 0) reasons.push('no_jurisdiction_signal');
  for (const c of countries) reasons.push(`${c.source}_country_${c.country}`);

  let verdict: ComplianceVerdictValue;
  if (s.deliverability === 'invalid') {
    reasons.push('undeliverable');
    verdict = COMPLIANCE_VERDICTS.doNotEmail;
  } else if (countries.length === 0) {
    verdict = COMPLIANCE_VERDICTS.consentRequired;
  } else {
    const binding = rules.filter((r) => r.regime === 'opt_in' && !(corporate && r.corporate_exemption));
    for (const r of rules) if (r.regime === 'opt_in' && corporate && r.corporate_exemption) reasons.push(`${r.id}_corporate_subscriber`);
    for (const r of binding) reasons.push(`${r.id}_requires_consent`);
    if (rules.length === 0) reasons.push('no_rule_for_country');
    verdict = binding.length > 0 || rules.length === 0 ? COMPLIANCE_VERDICTS.consentRequired : COMPLIANCE_VERDICTS.allowed;
    if (verdict === COMPLIANCE_VERDICTS.allowed) for (const r of rules) reasons.push(`${r.id}_opt_out`);
  }
  return {
    verdict,
    legal_to_email: verdict === COMPLIANCE_VERDICTS.allowed ? true : verdict === COMPLIANCE_VERDICTS.doNotEmail ? false : null,
    countries,
    laws,
    reasons,
    signals: s,
    disclaimer: NOT_LEGAL_ADVICE,
  };
}
