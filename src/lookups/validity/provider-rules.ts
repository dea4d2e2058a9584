import data from './provider-rules.json' with { type: 'json' };

export const PROVIDER_BEHAVIOURS = { acceptsAll: 'accepts_all' } as const;
export type ProviderBehaviour = (typeof PROVIDER_BEHAVIOURS)[keyof typeof PROVIDER_BEHAVIOURS];

export interface ProviderRule {
  provider: string;
  mx_suffixes: string[];
  behaviour: ProviderBehaviour;
  source: string;
  checked: string;
}

export const PROVIDER_RULES: readonly ProviderRule[] = (data.rules as ProviderRule[]).filter((r) => Object.values(PROVIDER_BEHAVIOURS).includes(r.behaviour));

/** The rule for an MX host (`mta5.am0.yahoodns.net` matches `yahoodns.net`), or undefined. */
export function providerRuleFor(mxHost: string, rules: readonly ProviderRule[] = PROVIDER_RULES): ProviderRule | undefined {
  const host = mxHost.toLowerCase().replace(/\.$/, '');
  return rules.find((r) => r.mx_suffixes.some((s) => host === s || host.endsWith(`.${s}`)));
}
