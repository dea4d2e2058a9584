import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';

/** Lookup kind a remote certificate-transparency service answers (the remote-provider protocol's path names it). */
export const CT_SUBDOMAINS_KIND = 'ct_subdomains';

export interface Subdomain {
  name: string;
  /** The earliest certificate logged for the name (ISO 8601). */
  first_seen: string;
  /** `current` when first seen under the present registration, `previous` when before it (an earlier owner). */
  owner_era: 'current' | 'previous' | 'unknown';
}

export type SubdomainSection =
  | { status: 'ok'; names: Subdomain[] }
  | { status: 'unknown'; reason: string; names: null };

const MAX_SUBDOMAINS = 500;

/**
 * Turns the CT service's answer for a domain ({names: [{name, first_seen}]}) into the section, with
 * `owner_era` from the registration date: a certificate older than the present registration was
 * asked for by whoever held the name before (a dropped domain re-registered), so its names say
 * nothing about the present owner. Names outside the domain are dropped: a service answer is data.
 */
export function subdomainSection(domain: string, outcome: LookupOutcome<unknown> | undefined, registeredAt: string | null): SubdomainSection {
  if (outcome === undefined) return { status: 'unknown', reason: 'no_answer', names: null };
  if (!outcome.ok) return { status: 'unknown', reason: outcome.code, names: null };
  const raw = (outcome.result as { names?: unknown } | null)?.names;
  if (!Array.isArray(raw)) return { status: 'unknown', reason: 'malformed_answer', names: null };
  const registered = registeredAt === null ? NaN : Date.parse(registeredAt);
  const byName = new Map<string, Subdomain>();
  for (const item of raw) {
    const name = typeof item?.name === 'string' ? item.name.toLowerCase().replace(/\.$/, '').replace(/^\*\./, '') : '';
    const seen = typeof item?.first_seen === 'string' ? Date.parse(item.first_seen) : NaN;
    if (name === '' || Number.isNaN(seen) || !(name === domain || name.endsWith(`.${domain}`))) continue;
    const prior = byName.get(name);
    if (prior && Date.parse(prior.first_seen) <= seen) continue;
    const era = Number.isNaN(registered) ? 'unknown' : seen < registered ? 'previous' : 'current';
    byName.set(name, { name, first_seen: new Date(seen).toISOString(), owner_era: era });
  }
  const names = [...byName.values()].sort((a, b) => a.name.localeCompare(b.name)).slice(0, MAX_SUBDOMAINS);
  return { status: 'ok', names };
}

/** Asks the CT service for one domain; never throws (the remote provider reports failures as outcomes). */
export async function askCt(provider: LookupProvider | undefined, domain: string, signal?: AbortSignal): Promise<LookupOutcome<unknown> | undefined> {
  if (!provider) return undefined;
  const [outcome] = await provider.lookup([domain], signal);
  return outcome;
}
