/**
 * The compliance rule table (docs/email-enrich-compliance.md renders the same data): which law
 * applies where, and what it asks of commercial email. Data, not code, so that a reader can check
 * it against the statutes and an operator can see exactly what a verdict rests on.
 *
 * `opt_in`: prior consent is the rule for marketing email to individuals (soft opt-in and the
 * like are exceptions the sender must establish, Sluice cannot see them). `opt_out`: commercial
 * email may be sent without prior consent if it honours unsubscribes and identifies the sender.
 * `corporate_exemption`: the consent rule does not cover addresses of corporate subscribers (UK
 * PECR reg. 22 protects individual subscribers only), which a role address at a company domain is.
 */
export interface ComplianceRule {
  id: string;
  name: string;
  jurisdiction: string;
  /** ISO 3166-1 alpha-2 codes the rule covers. */
  countries: readonly string[];
  regime: 'opt_in' | 'opt_out';
  corporate_exemption: boolean;
  requirements: readonly string[];
}

export const EU_EEA = ['AT', 'BE', 'BG', 'HR', 'CY', 'CZ', 'DK', 'EE', 'FI', 'FR', 'DE', 'GR', 'HU', 'IE', 'IT', 'LV', 'LT', 'LU', 'MT', 'NL', 'PL', 'PT', 'RO', 'SK', 'SI', 'ES', 'SE', 'IS', 'LI', 'NO'] as const;

export const COMPLIANCE_RULES: readonly ComplianceRule[] = [
  {
    id: 'gdpr_eprivacy',
    name: 'GDPR and the ePrivacy Directive (2002/58/EC, art. 13)',
    jurisdiction: 'EU/EEA',
    countries: EU_EEA,
    regime: 'opt_in',
    corporate_exemption: false,
    requirements: ['prior consent or an existing customer relationship (soft opt-in)', 'a lawful basis for processing the address', 'an unsubscribe in every message', 'sender identified'],
  },
  {
    id: 'uk_gdpr_pecr',
    name: 'UK GDPR and PECR (reg. 22)',
    jurisdiction: 'United Kingdom',
    countries: ['GB'],
    regime: 'opt_in',
    corporate_exemption: true,
    requirements: ['prior consent or soft opt-in for individual subscribers', 'an unsubscribe in every message', 'sender identified'],
  },
  {
    id: 'casl',
    name: "Canada's Anti-Spam Legislation (CASL)",
    jurisdiction: 'Canada',
    countries: ['CA'],
    regime: 'opt_in',
    corporate_exemption: false,
    requirements: ['express or implied consent', 'sender identification and contact information', 'an unsubscribe honoured within 10 business days'],
  },
  {
    id: 'can_spam',
    name: 'CAN-SPAM Act (15 U.S.C. 7701)',
    jurisdiction: 'United States',
    countries: ['US'],
    regime: 'opt_out',
    corporate_exemption: false,
    requirements: ['no false or misleading headers or subject lines', 'identified as an advertisement', 'a valid physical postal address', 'an opt-out honoured within 10 business days'],
  },
  {
    id: 'spam_act_au',
    name: 'Spam Act 2003 (Australia)',
    jurisdiction: 'Australia',
    countries: ['AU'],
    regime: 'opt_in',
    corporate_exemption: false,
    requirements: ['express or inferred consent', 'sender identified', 'a functional unsubscribe honoured within 5 business days'],
  },
  {
    id: 'uema_nz',
    name: 'Unsolicited Electronic Messages Act 2007 (New Zealand)',
    jurisdiction: 'New Zealand',
    countries: ['NZ'],
    regime: 'opt_in',
    corporate_exemption: false,
    requirements: ['express, inferred or deemed consent', 'sender identified', 'a functional unsubscribe'],
  },
  {
    id: 'fadp_uwg_ch',
    name: 'Swiss FADP and UWG art. 3 para. 1 lit. o',
    jurisdiction: 'Switzerland',
    countries: ['CH'],
    regime: 'opt_in',
    corporate_exemption: false,
    requirements: ['prior consent or an existing customer relationship', 'sender identified', 'an easy, free opt-out'],
  },
  {
    id: 'asemr_jp',
    name: 'Act on Regulation of Transmission of Specified Electronic Mail (Japan)',
    jurisdiction: 'Japan',
    countries: ['JP'],
    regime: 'opt_in',
    corporate_exemption: false,
    requirements: ['prior consent, with a record of it', 'sender name and address', 'an opt-out address'],
  },
];

/** ccTLDs whose country code differs from the label (.uk is GB); others are the label upper-cased. */
const TLD_COUNTRY: Record<string, string> = { uk: 'GB', eu: 'EU' };

/** The country a domain's ccTLD names, or null for a generic TLD. */
export function ccTldCountry(domain: string): string | null {
  const tld = domain.slice(domain.lastIndexOf('.') + 1).toLowerCase();
  if (TLD_COUNTRY[tld] !== undefined) return TLD_COUNTRY[tld]!;
  return /^[a-z]{2}$/.test(tld) ? tld.toUpperCase() : null;
}

/** Rules that cover a country; `EU` (the .eu TLD) stands for every EU/EEA member. */
export function rulesFor(country: string): ComplianceRule[] {
  return COMPLIANCE_RULES.filter((r) => r.countries.includes(country) || (country === 'EU' && r.id === 'gdpr_eprivacy'));
}
