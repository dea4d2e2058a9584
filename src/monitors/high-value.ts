import type { MonitorType } from '../storage/monitor-records.js';
import type { FieldValue, Profile } from './tracked-values.js';

/** The data class whose exposure makes an email's new breach an alert (the index's spelling). */
export const PASSWORDS = 'Passwords';

/** What a high-value alert is about. */
export const ALERT_KINDS = {
  /** An email whose exposed data now include passwords and did not before. */
  passwordsExposed: 'passwords_exposed',
  /** A phone number in no breach before, in one or more now. */
  newlyBreached: 'newly_breached',
  /** A company whose best match is another company now: its name or domain changed. */
  companyChanged: 'company_changed',
  /** An address whose prefix now looks hijacked (src/lookups/ip/ip-network-answer.ts) and did not before. */
  possibleHijack: 'possible_hijack',
  /** A domain whose registrar is another one now: a transfer, which its owner must have meant. */
  registrarChanged: 'registrar_changed',
} as const;

export interface HighValueAlert {
  target: string;
  kind: (typeof ALERT_KINDS)[keyof typeof ALERT_KINDS];
  /** The fields that make it one, old and new. */
  old: Record<string, FieldValue>;
  new: Record<string, FieldValue>;
}

const has = (value: FieldValue | undefined, item: string): boolean => Array.isArray(value) && value.includes(item);

/**
 * A change worth an alert of its own (`monitor.alert.high_value`), whatever fields the monitor
 * tracks or its change-detection mode: it compares whole profiles. Never for a baseline.
 *
 * - email: `exposed_data` gains `Passwords`: a breach now known exposed the address's password.
 * - phone: `breached` goes from false to true: the number is in its first known breach.
 * - domain: `registrar` changes from one registrar to another (a transfer).
 * - ip: `possible_hijack` goes from false to true (src/lookups/ip/ip-network-answer.ts says when).
 * - company: the best match's `name` or `domain` changes from one value to another: the name now
 *   finds another company (renamed, acquired, or gone), which is what a watcher must look at first.
 */
export function highValueAlert(type: MonitorType, target: string, previous: Profile | null, next: Profile): HighValueAlert | null {
  if (previous === null) return null;
  if (type === 'email') {
    if (has(previous.exposed_data, PASSWORDS) || !has(next.exposed_data, PASSWORDS)) return null;
    return { target, kind: ALERT_KINDS.passwordsExposed, old: { exposed_data: previous.exposed_data ?? [] }, new: { exposed_data: next.exposed_data ?? [], breaches: next.breaches ?? [] } };
  }
  if (type === 'phone') {
    if (previous.breached === true || next.breached !== true) return null;
    return { target, kind: ALERT_KINDS.newlyBreached, old: { breached: false }, new: { breached: true, total_breaches: next.total_breaches ?? 0, summary: next.summary ?? '' } };
  }
  if (type === 'ip') {
    // The prefix (or a more specific one) appeared with a new origin while the old one still announces it.
    if (previous.possible_hijack === true || next.possible_hijack !== true) return null;
    return { target, kind: ALERT_KINDS.possibleHijack, old: { prefix: previous.prefix ?? null, origin_asn: previous.origin_asn ?? [] }, new: { prefix: next.prefix ?? null, origin_asn: next.origin_asn ?? [] } };
  }
  if (type === 'domain') {
    // A registrar seen before and another one now (not a registry that stopped answering: null is no value).
    if (typeof previous.registrar !== 'string' || typeof next.registrar !== 'string' || previous.registrar === next.registrar) return null;
    return { target, kind: ALERT_KINDS.registrarChanged, old: { registrar: previous.registrar, expires_at: previous.expires_at ?? null }, new: { registrar: next.registrar, expires_at: next.expires_at ?? null } };
  }
  const moved = (field: string) => previous[field] !== null && previous[field] !== undefined && next[field] !== null && previous[field] !== next[field];
  if (!moved('name') && !moved('domain')) return null;
  return { target, kind: ALERT_KINDS.companyChanged, old: { name: previous.name ?? null, domain: previous.domain ?? null }, new: { name: next.name ?? null, domain: next.domain ?? null } };
}
