import { companyPipeline } from '../../pipelines/company.js';
import { domainPipeline } from '../../pipelines/domain.js';
import { genderPipeline } from '../../pipelines/gender.js';
import { ipNetworkPipeline } from '../../pipelines/ip-network.js';
import { phoneBreachesPipeline } from '../../pipelines/phone-breaches.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { isMonitorType, MONITOR_TYPES, UNSUPPORTED_MONITOR_TYPES, type MonitorType } from '../storage/monitor-records.js';

/** What a monitor type is: how its targets are read, and which result fields a run can compare. */
export interface MonitorTypeSpec {
  readonly type: MonitorType;
  /** The target's key in a snapshot (spec 2.8 names `email`), besides `target`. */
  readonly key: string;
  /**
   * Reads a target the way the type's bulk job reads its key column (header names, aliases,
   * normalisation), so a monitor's target and a job's row are one key, billed as one.
   */
  readonly reading: Pipeline;
  /** The result fields a run compares; all of them unless the monitor tracks fewer. */
  readonly fields: readonly string[];
  /**
   * Fields a monitor compares only when it names them in `tracked_fields`: they cost a lookup of
   * their own (email `validity`: an SMTP probe and its credit), so no monitor pays for them unasked.
   */
  readonly optionalFields?: readonly string[];
}

/**
 * The monitor types with lookups. Email targets are read as every email job reads them
 * (`normaliseEmail`, which the gender and email_breaches pipelines share), and their fields are
 * `breach_info`'s; phone fields are the phone-breaches result's; company fields are the best
 * match's profile.
 */
export const MONITOR_TYPE_SPECS: Readonly<Record<MonitorType, MonitorTypeSpec>> = {
  email: {
    type: MONITOR_TYPES.email,
    key: 'email',
    reading: genderPipeline,
    fields: ['breached', 'count', 'first_breach', 'last_breach', 'services', 'exposed_data', 'breaches'],
    // The address's deliverability status (docs/email-verification.md): a mailbox that stops accepting mail is a change.
    optionalFields: ['validity'],
  },
  phone: {
    type: MONITOR_TYPES.phone,
    key: 'phone',
    reading: phoneBreachesPipeline,
    fields: ['breached', 'total_breaches', 'first_breached', 'last_breached', 'summary'],
  },
  company: {
    type: MONITOR_TYPES.company,
    key: 'company',
    reading: companyPipeline,
    fields: ['name', 'domain', 'industry', 'employee_count', 'country', 'website', 'description'],
  },
  // What a network watcher wants to hear about: the announcing prefix, its origin AS, the registry
  // block and its registrant, and a possible hijack.
  ip: {
    type: MONITOR_TYPES.ip,
    key: 'ip',
    reading: ipNetworkPipeline,
    fields: ['prefix', 'origin_asn', 'network', 'rir', 'registrant_org', 'possible_hijack'],
  },
  // What a domain's owner wants to hear about: its records, who registers it and until when, and
  // the names certificates were newly issued for (a new subdomain: shadow IT, or a takeover).
  // SOA is left out: its serial moves with every zone edit, which the records already show.
  domain: {
    type: MONITOR_TYPES.domain,
    key: 'domain',
    reading: domainPipeline,
    fields: ['a', 'aaaa', 'mx', 'ns', 'txt', 'caa', 'registrar', 'expires_at', 'subdomains'],
  },
};

/**
 * Billing rule of monitor runs: a run is a bulk job of its type and is billed as one (spec 8): one
 * credit per target the account has not paid for within the charge window, a target paid for in the
 * window (by a run, a job or a single lookup) free, each target charged at most once per run
 * however often the run is resumed. So a run costs at most this much per target, and often nothing.
 */
export const MAX_CREDITS_PER_TARGET_PER_RUN = 1;

/** `type` as a monitor type: `unknown_monitor_type` or, for spec types without a lookup, `monitor_type_unsupported` (both 422). */
export function monitorType(raw: string): MonitorType {
  if (isMonitorType(raw)) return raw;
  if ((UNSUPPORTED_MONITOR_TYPES as readonly string[]).includes(raw)) {
    throw new AppError(ERROR_CODES.monitorTypeUnsupported, `monitor type ${raw} is not supported yet: its lookup does not exist; use one of ${Object.keys(MONITOR_TYPES).join(', ')}`, {
      statusCode: 422,
      details: { type: raw, supported: Object.keys(MONITOR_TYPES) },
    });
  }
  throw new AppError(ERROR_CODES.unknownMonitorType, `unknown monitor type "${raw.slice(0, 40)}"; use one of ${Object.keys(MONITOR_TYPES).join(', ')}`, {
    statusCode: 422,
    details: { supported: Object.keys(MONITOR_TYPES) },
  });
}

/** The fields to track: all of the type's by default, none unknown (`unknown_tracked_field`, 422), each once, in the type's order. */
export function trackedFields(type: MonitorType, asked: readonly string[] | undefined): string[] {
  const spec = MONITOR_TYPE_SPECS[type];
  if (asked === undefined) return [...spec.fields];
  const fields = [...spec.fields, ...(spec.optionalFields ?? [])];
  const unknown = asked.filter((f) => !fields.includes(f));
  if (unknown.length > 0 || asked.length === 0) {
    throw new AppError(
      ERROR_CODES.unknownTrackedField,
      asked.length === 0 ? 'tracked_fields names no field; leave it out to track all' : `${type} monitors have no field ${unknown.map((f) => `"${f.slice(0, 40)}"`).join(', ')}; fields: ${fields.join(', ')}`,
      { statusCode: 422, details: { fields } },
    );
  }
  return fields.filter((f) => asked.includes(f));
}
