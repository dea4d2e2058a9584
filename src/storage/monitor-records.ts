/**
 * Monitors, target lists and monitor runs as the store keeps them. The closed sets live here, beside
 * the records, so that both adapters and every layer above read one definition.
 */

/** The monitor types whose lookups exist: a monitor of one of these can be created. */
export const MONITOR_TYPES = { email: 'email', phone: 'phone', company: 'company', ip: 'ip', domain: 'domain' } as const;
export type MonitorType = (typeof MONITOR_TYPES)[keyof typeof MONITOR_TYPES];

/** Types spec 2.8 names that have no lookup yet: refused with `monitor_type_unsupported`, not `unknown_monitor_type`. */
export const UNSUPPORTED_MONITOR_TYPES = ['darkweb'] as const;

export function isMonitorType(value: string): value is MonitorType {
  return Object.hasOwn(MONITOR_TYPES, value);
}

/** Spec 2.8's frequencies. Weekly and biweekly are fixed lengths; monthly and quarterly are calendar months (UTC). */
export const FREQUENCIES = { weekly: 'weekly', biweekly: 'biweekly', monthly: 'monthly', quarterly: 'quarterly' } as const;
export type Frequency = (typeof FREQUENCIES)[keyof typeof FREQUENCIES];

export function isFrequency(value: string): value is Frequency {
  return Object.hasOwn(FREQUENCIES, value);
}

/**
 * How a run's result for a target is compared with the previous one, on the tracked fields only:
 *
 * - `any_change`: every difference is a change: a value set, altered or cleared, a list item added
 *   or removed.
 * - `new_only`: only what appears is a change: a field that was empty (null, '', false, 0, [])
 *   and now has a value, a number that grew, a list that gained items. Values that are cleared or
 *   shrink (a breach taken down, a count that fell) are not reported.
 *
 * The first result of a target (no previous run saw it) is its baseline: never a change.
 */
export const CHANGE_MODES = { anyChange: 'any_change', newOnly: 'new_only' } as const;
export type ChangeMode = (typeof CHANGE_MODES)[keyof typeof CHANGE_MODES];

export function isChangeMode(value: string): value is ChangeMode {
  return Object.values(CHANGE_MODES).includes(value as ChangeMode);
}

/** A paused monitor is never claimed by the schedule and takes no run by hand. */
export const MONITOR_STATUSES = { active: 'active', paused: 'paused' } as const;
export type MonitorStatus = (typeof MONITOR_STATUSES)[keyof typeof MONITOR_STATUSES];

/** Where a run came from: a due period of the schedule, or a caller's `run`. */
export const RUN_TRIGGERS = { schedule: 'schedule', manual: 'manual' } as const;
export type RunTrigger = (typeof RUN_TRIGGERS)[keyof typeof RUN_TRIGGERS];

/** Why a run was cancelled before it started: pausing a monitor cancels its queued runs. */
export const RUN_CANCEL_REASONS = { monitorPaused: 'monitor_paused' } as const;

/** A run is queued when it is recorded; the engine job that carries it moves it on. */
export const RUN_STATUSES = { queued: 'queued', running: 'running', completed: 'completed', failed: 'failed', cancelled: 'cancelled' } as const;
export type RunStatus = (typeof RUN_STATUSES)[keyof typeof RUN_STATUSES];

/** Most targets one list or one monitor holds: a bulk job's row limit. */
export const MAX_TARGETS = 1_000_000;

/** A list being filled from an upload is `importing`; it can seed a monitor once `ready`. */
export const LIST_STATUSES = { importing: 'importing', ready: 'ready' } as const;
export type ListStatus = (typeof LIST_STATUSES)[keyof typeof LIST_STATUSES];

export interface TargetListRecord {
  id: string;
  accountId: string;
  name: string;
  type: MonitorType;
  status: ListStatus;
  targetCount: number;
  /** Rows of the source that were not a valid target, and rows that repeated an earlier target. */
  invalidCount: number;
  duplicateCount: number;
  /** Invalid rows by error code, as the import counted them. */
  invalidByCode: Record<string, number>;
  /** The uploaded CSV in the object store; null for a list made from JSON. */
  sourceKey: string | null;
  createdAt: number;
}

export interface MonitorRecord {
  id: string;
  accountId: string;
  name: string;
  type: MonitorType;
  frequency: Frequency;
  trackedFields: string[];
  changeDetection: ChangeMode;
  status: MonitorStatus;
  /** Period starts are anchor + n periods (n = 0, 1, ...), so monthly dates do not drift. */
  scheduleAnchor: number;
  /** The start of the next period the schedule will run; kept while paused (resume decides). */
  nextRunAt: number;
  /** When the latest run (scheduled or by hand) was queued. */
  lastRunAt: number | null;
  targetCount: number;
  createdAt: number;
  updatedAt: number;
}

export interface NewMonitor extends Pick<MonitorRecord, 'id' | 'accountId' | 'name' | 'type' | 'frequency' | 'trackedFields' | 'changeDetection'> {
  /** The first run's time and the schedule's anchor. */
  startAt: number;
  now: number;
}

export interface MonitorChanges {
  name?: string;
  frequency?: Frequency;
  trackedFields?: string[];
  changeDetection?: ChangeMode;
}

export interface MonitorRunRecord {
  id: string;
  monitorId: string;
  accountId: string;
  trigger: RunTrigger;
  /** The schedule period this run is for (at most one run per monitor and period); null by hand. */
  periodStart: number | null;
  status: RunStatus;
  /** The engine job that carries the run, once it has one. */
  jobId: string | null;
  totalRecords: number | null;
  changesDetected: number | null;
  creditsUsed: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  reason: string | null;
  createdAt: number;
}

/** One target of a monitor, as the targets listing shows it. */
export interface MonitorTarget {
  target: string;
  addedAt: number;
}

/** A target watched by one or more monitors of an account. */
export interface MonitoringTarget {
  target: string;
  type: MonitorType;
  monitorIds: string[];
  addedAt: number;
}

export interface Page {
  limit: number;
  offset: number;
}
