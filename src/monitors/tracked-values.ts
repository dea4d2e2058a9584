import { companyPipeline } from '../../pipelines/company.js';
import { DOMAIN_LIST_SEPARATOR, domainPipeline } from '../../pipelines/domain.js';
import { emailBreachesPipeline, LIST_SEPARATOR } from '../../pipelines/email-breaches.js';
import { phoneBreachesPipeline } from '../../pipelines/phone-breaches.js';
import { IP_LIST_SEPARATOR, ipNetworkPipeline } from '../../pipelines/ip-network.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import { escapeFormula } from '../jobs/csv-writer.js';
import { CHANGE_MODES, type ChangeMode, type MonitorRecord, type MonitorType } from '../storage/monitor-records.js';

/** A field's value in a profile: what the result file says, typed back. */
export type FieldValue = string | number | boolean | null | string[];
/** One target's profile: every field of its monitor type (MONITOR_TYPE_SPECS' `fields`). */
export type Profile = Record<string, FieldValue>;
/** Spec 2.8's `changes`: per changed field, its old and new value. */
export type Changes = Record<string, { old: FieldValue; new: FieldValue }>;

/** The bulk job type a run of each monitor type is: its targets are that job's rows. */
export const RUN_PIPELINES: Readonly<Record<MonitorType, Pipeline>> = {
  email: emailBreachesPipeline,
  phone: phoneBreachesPipeline,
  company: companyPipeline,
  ip: ipNetworkPipeline,
  domain: domainPipeline,
};

const list = (cell: string, separator: string = LIST_SEPARATOR): string[] => (cell === '' ? [] : cell.split(separator));
const text = (cell: string): string | null => (cell === '' ? null : cell);
const count = (cell: string): number | null => (cell === '' ? null : Number(cell));
const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/**
 * A profile from a result row's cells for the pipeline's `resultColumns` (formula escapes undone),
 * per type. The result file is what a run reads, so a profile holds what it holds: an email's
 * `breaches` are the breach names (their dates and data classes are in `first_breach`,
 * `last_breach` and `exposed_data`), and `services` the same names sorted, as `breach_info` makes
 * them. A field without a value (no breach date, no company found) is null.
 */
const PROFILES: Readonly<Record<MonitorType, (cells: readonly string[]) => Profile>> = {
  email: ([breached = '', n = '', first = '', last = '', breaches = '', exposed = '']) => ({
    breached: breached === 'true',
    count: Number(n),
    first_breach: text(first),
    last_breach: text(last),
    services: [...new Set(list(breaches))].sort(byCodeUnits),
    exposed_data: list(exposed),
    breaches: list(breaches),
  }),
  phone: ([, breached = '', total = '', first = '', last = '', summary = '']) => ({
    breached: breached === 'true',
    total_breaches: Number(total),
    first_breached: text(first),
    last_breached: text(last),
    summary,
  }),
  company: ([name = '', domain = '', industry = '', employees = '', country = '', website = '', description = '']) => ({
    name: text(name),
    domain: text(domain),
    industry: text(industry),
    employee_count: count(employees),
    country: text(country),
    website: text(website),
    description: text(description),
  }),
  // The `ip` pipeline's cells: network_cidr, rir, registrant_org, allocated_at, country,
  // origin_asn, as_name, company, bgp_prefix, announced, upstreams, origin_changes, possible_hijack.
  ip: ([cidr = '', rir = '', registrant = '', , , origins = '', , , prefix = '', , , , hijack = '']) => ({
    prefix: text(prefix),
    origin_asn: list(origins, IP_LIST_SEPARATOR),
    network: text(cidr),
    rir: text(rir),
    registrant_org: text(registrant),
    possible_hijack: hijack === 'true',
  }),
  // The `domain` pipeline's cells: a, aaaa, mx, ns, txt, caa, soa, dns_errors, spf, dmarc_policy,
  // registrar, created_at, expires_at, age_days, dnssec, company, subdomains, discovery_found.
  domain: ([a = '', aaaa = '', mx = '', ns = '', txt = '', caa = '', , , , , registrar = '', , expires = '', , , , subdomains = '']) => ({
    a: list(a, DOMAIN_LIST_SEPARATOR),
    aaaa: list(aaaa, DOMAIN_LIST_SEPARATOR),
    mx: list(mx, DOMAIN_LIST_SEPARATOR),
    ns: list(ns, DOMAIN_LIST_SEPARATOR),
    txt: list(txt, DOMAIN_LIST_SEPARATOR),
    caa: list(caa, DOMAIN_LIST_SEPARATOR),
    registrar: text(registrar),
    expires_at: text(expires),
    subdomains: list(subdomains, DOMAIN_LIST_SEPARATOR),
  }),
};

export function profileOf(type: MonitorType, resultCells: readonly string[]): Profile {
  return PROFILES[type](resultCells.map(unescapeCell));
}

/**
 * The job a run of `monitor` is: its type's pipeline alone, or for an email monitor that tracks
 * `validity`, that pipeline and the validity lookup side by side in one job (one row per target,
 * each lookup billed under its own kind).
 */
export function runJobType(monitor: Pick<MonitorRecord, 'type' | 'trackedFields'>): { type: string; lookups?: { type: string }[] } {
  const main = RUN_PIPELINES[monitor.type].type;
  if (monitor.type !== 'email' || !monitor.trackedFields.includes('validity')) return { type: main };
  return { type: `${main},validity`, lookups: [{ type: main }, { type: 'validity' }] };
}

/**
 * The result file's cell as the lookup gave it: `escapeFormula` put a `'` before a cell a
 * spreadsheet would run, and a cell it would have escaped is taken back. (A value that itself began
 * with `'` and a formula character reads one `'` short; no lookup answers such a value.)
 */
export function unescapeCell(cell: string): string {
  return cell.startsWith("'") && escapeFormula(cell.slice(1)) === cell ? cell.slice(1) : cell;
}

/**
 * A stored target as a cell of the run's input, which the type's job reads back to the same key:
 * emails and E.164 numbers are their own cells; a company key drops its `name:` or `domain:` form,
 * which `normaliseCompany` gives back (a host is a domain, anything else a name).
 */
export function inputCell(type: MonitorType, target: string): string {
  if (type !== 'company') return target;
  return target.replace(/^(?:name|domain):/, '');
}

/** A value that is not there: what `new_only` treats as empty. */
function isEmpty(value: FieldValue | undefined): boolean {
  return value === undefined || value === null || value === '' || value === false || value === 0 || (Array.isArray(value) && value.length === 0);
}

function same(a: FieldValue | undefined, b: FieldValue | undefined): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

/** Whether `next` is a change from `previous` under the mode (see CHANGE_MODES for the two rules). */
function changed(mode: ChangeMode, previous: FieldValue | undefined, next: FieldValue): boolean {
  if (same(previous, next)) return false;
  if (mode === CHANGE_MODES.anyChange) return true;
  if (isEmpty(next)) return false;
  if (isEmpty(previous)) return true;
  if (typeof previous === 'number' && typeof next === 'number') return next > previous;
  if (Array.isArray(previous) && Array.isArray(next)) return next.some((item) => !previous.includes(item));
  return false;
}

/**
 * The tracked fields that changed from `previous` to `next`, or null when none did. A target
 * without a previous profile (its first run, or its first success) is a baseline: never a change.
 */
export function compareProfiles(previous: Profile | null, next: Profile, tracked: readonly string[], mode: ChangeMode): Changes | null {
  if (previous === null) return null;
  let changes: Changes | null = null;
  for (const field of tracked) {
    const value = next[field] ?? null;
    if (!changed(mode, previous[field], value)) continue;
    changes ??= {};
    changes[field] = { old: previous[field] ?? null, new: value };
  }
  return changes;
}
