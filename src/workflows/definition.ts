import { Cron } from 'croner';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { checkExpression, pathSegments } from './expression.js';
import type { StepDefinition } from './step-definition.js';
import { checkStepHeaders } from './step-headers.js';

/**
 * A workflow definition (spec 2.5): what a version holds, checked whole at save so that a run
 * never meets a step it cannot execute or a reference it cannot resolve. The rules are in
 * docs/workflows.md; every refusal is invalid_workflow, step_type_unsupported, trigger_unsupported,
 * invalid_reference or invalid_expression, with the step it concerns in `details`.
 */

export const WORKFLOW_STATUSES = ['active', 'paused', 'draft'] as const;
export type WorkflowStatus = (typeof WORKFLOW_STATUSES)[number];

export const TRIGGER_TYPES = ['manual', 'webhook', 'schedule', 'file_upload', 'monitor_event'] as const;
/** The triggers Sluice starts runs for today; the others are refused at save, not stored to sit idle. */
export const SUPPORTED_TRIGGERS: ReadonlySet<string> = new Set(['manual', 'schedule', 'webhook', 'monitor_event']);

/** Lookup step types and the job pipeline (lookup kind) each runs through. */
export const LOOKUP_STEPS: Readonly<Record<string, string>> = {
  email_lookup: 'gender',
  phone_lookup: 'phone_breaches',
  company_lookup: 'company',
};
/** Spec 2.5 names them; Sluice has no lookup for them yet. */
export const UNSUPPORTED_STEPS: ReadonlySet<string> = new Set(['domain_lookup', 'ip_lookup', 'darkweb_lookup']);
export const STEP_TYPES = [...Object.keys(LOOKUP_STEPS), 'domain_lookup', 'ip_lookup', 'darkweb_lookup', 'condition', 'delay', 'webhook', 'transform'] as const;

export const MAX_STEPS = 50;
export const MAX_DELAY_SECONDS = 30 * 24 * 3600;
const STEP_ID = /^[A-Za-z][A-Za-z0-9_]{0,39}$/;

export type { StepDefinition };

export interface TriggerDefinition {
  type: string;
  [setting: string]: unknown;
}

/** The versioned part of a workflow: what a run pins. */
export interface WorkflowDefinition {
  name: string;
  description: string;
  trigger: TriggerDefinition;
  steps: StepDefinition[];
}

function refuse(code: (typeof ERROR_CODES)[keyof typeof ERROR_CODES], message: string, details: Record<string, unknown> = {}): never {
  throw new AppError(code, message, { statusCode: 422, details });
}

function plainObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

/** Checks `step`'s reads: `input.<path>`, or `steps.<id>.output.<path>` of a step before it. */
function checkReferences(paths: readonly string[], earlier: ReadonlySet<string>, stepId: string): void {
  for (const path of paths) {
    const [root, ...rest] = pathSegments(path);
    if (root === 'input') continue;
    if (root === 'steps' && rest.length >= 2 && rest[1] === 'output') {
      if (earlier.has(rest[0]!)) continue;
      refuse(ERROR_CODES.invalidReference, `step ${stepId} reads ${path}, but ${rest[0]} is not a step before it`, { step: stepId, path });
    }
    refuse(ERROR_CODES.invalidReference, `step ${stepId} reads ${path}: a path starts with input. or steps.<earlier step>.output`, { step: stepId, path });
  }
}

function expressionOf(step: StepDefinition, field: string, required: boolean, earlier: ReadonlySet<string>): void {
  if (!Object.hasOwn(step.config, field)) {
    if (required) refuse(ERROR_CODES.invalidWorkflow, `step ${step.id} (${step.type}) needs config.${field}`, { step: step.id, field });
    return;
  }
  try {
    checkReferences(checkExpression(step.config[field]), earlier, step.id);
  } catch (e) {
    if (e instanceof AppError && e.details?.step === undefined) throw new AppError(e.code, `step ${step.id}: ${e.message}`, { statusCode: 422, details: { ...e.details, step: step.id } });
    throw e;
  }
}

/** The definition as stored, or a 422 naming the first problem. */
export function validateDefinition(input: { name?: unknown; description?: unknown; trigger?: unknown; steps?: unknown }): WorkflowDefinition {
  if (typeof input.name !== 'string' || input.name.trim() === '' || input.name.length > 200) refuse(ERROR_CODES.invalidWorkflow, 'name is 1 to 200 characters');
  const description = input.description ?? '';
  if (typeof description !== 'string' || description.length > 2000) refuse(ERROR_CODES.invalidWorkflow, 'description is at most 2000 characters');
  const trigger = input.trigger ?? { type: 'manual' };
  if (!plainObject(trigger) || typeof trigger.type !== 'string' || !(TRIGGER_TYPES as readonly string[]).includes(trigger.type)) {
    refuse(ERROR_CODES.invalidWorkflow, `trigger.type is one of ${TRIGGER_TYPES.join(', ')}`);
  }
  if (!SUPPORTED_TRIGGERS.has(trigger.type)) refuse(ERROR_CODES.triggerUnsupported, `trigger ${trigger.type} does not start runs yet; use manual, schedule, webhook or monitor_event`, { trigger: trigger.type });
  const stored: TriggerDefinition = trigger.type === 'schedule' ? checkSchedule(trigger) : trigger.type === 'monitor_event' ? checkMonitorEvent(trigger) : { type: trigger.type };
  if (!Array.isArray(input.steps) || input.steps.length === 0 || input.steps.length > MAX_STEPS) refuse(ERROR_CODES.invalidWorkflow, `steps is a list of 1 to ${MAX_STEPS} steps`);
  const earlier = new Set<string>();
  const ids = input.steps.map((s: unknown) => (plainObject(s) ? s.id : undefined));
  const steps: StepDefinition[] = [];
  for (const [index, raw] of input.steps.entries()) {
    if (!plainObject(raw)) refuse(ERROR_CODES.invalidWorkflow, `steps[${index}] is not an object`, { index });
    const { id, type } = raw;
    const config = raw.config ?? {};
    if (typeof id !== 'string' || !STEP_ID.test(id)) refuse(ERROR_CODES.invalidWorkflow, `steps[${index}].id is a letter then up to 39 letters, digits or _`, { index });
    if (earlier.has(id)) refuse(ERROR_CODES.invalidWorkflow, `two steps are called ${id}`, { step: id });
    if (typeof type !== 'string' || !(STEP_TYPES as readonly string[]).includes(type)) refuse(ERROR_CODES.invalidWorkflow, `step ${id}: type is one of ${STEP_TYPES.join(', ')}`, { step: id });
    if (UNSUPPORTED_STEPS.has(type)) refuse(ERROR_CODES.stepTypeUnsupported, `step ${id}: Sluice has no lookup for ${type} yet`, { step: id, type });
    if (!plainObject(config)) refuse(ERROR_CODES.invalidWorkflow, `step ${id}: config is an object`, { step: id });
    const step: StepDefinition = { id, type, config };
    if (Object.hasOwn(LOOKUP_STEPS, type)) expressionOf(step, 'input', true, earlier);
    else if (type === 'condition') {
      expressionOf(step, 'expression', true, earlier);
      const onFalse = config.on_false ?? 'stop';
      if (onFalse !== 'stop') {
        const target = ids.indexOf(onFalse);
        if (typeof onFalse !== 'string' || target <= index) refuse(ERROR_CODES.invalidWorkflow, `step ${id}: on_false is "stop" or the id of a later step`, { step: id });
      }
    } else if (type === 'transform') expressionOf(step, 'expression', true, earlier);
    else if (type === 'delay') {
      const seconds = config.seconds;
      if (typeof seconds !== 'number' || !Number.isInteger(seconds) || seconds < 1 || seconds > MAX_DELAY_SECONDS) {
        refuse(ERROR_CODES.invalidWorkflow, `step ${id}: config.seconds is a whole number from 1 to ${MAX_DELAY_SECONDS}`, { step: id });
      }
    } else if (type === 'webhook') {
      if (typeof config.webhook_id !== 'string' || config.webhook_id === '') refuse(ERROR_CODES.invalidWorkflow, `step ${id}: config.webhook_id names one of the account's webhooks`, { step: id });
      expressionOf(step, 'body', false, earlier);
      checkStepHeaders(step);
    }
    steps.push(step);
    earlier.add(id);
  }
  return { name: input.name.trim(), description, trigger: stored, steps };
}

function cronOf(trigger: TriggerDefinition): Cron {
  return new Cron(trigger.cron as string, { timezone: trigger.timezone as string, paused: true });
}

/**
 * A schedule trigger: `cron`, five fields (minute hour day month weekday; no seconds, so at most one
 * run a minute), and `timezone`, an IANA name (default UTC) the fields are read in.
 */
function checkSchedule(trigger: Record<string, unknown>): TriggerDefinition {
  const { cron, timezone = 'UTC' } = trigger;
  if (typeof cron !== 'string' || cron.trim().split(/\s+/).length !== 5) refuse(ERROR_CODES.invalidWorkflow, 'trigger.cron is a cron expression of five fields: minute hour day month weekday');
  if (typeof timezone !== 'string' || timezone.length > 64) refuse(ERROR_CODES.invalidWorkflow, 'trigger.timezone is an IANA time zone such as Europe/Berlin');
  try {
    Intl.DateTimeFormat('en', { timeZone: timezone });
  } catch {
    refuse(ERROR_CODES.invalidWorkflow, `trigger.timezone ${timezone.slice(0, 64)} is no IANA time zone`);
  }
  const stored = { type: 'schedule', cron: cron.trim(), timezone };
  try {
    if (cronOf(stored).nextRun() === null) refuse(ERROR_CODES.invalidWorkflow, `trigger.cron ${cron} never fires`);
  } catch (e) {
    if (e instanceof AppError) throw e;
    refuse(ERROR_CODES.invalidWorkflow, `trigger.cron ${cron.slice(0, 100)} is not a valid cron expression: ${(e as Error).message}`);
  }
  return stored;
}

/** A monitor_event trigger names the monitor whose completed runs (with changes) start the workflow. */
function checkMonitorEvent(trigger: Record<string, unknown>): TriggerDefinition {
  const monitorId = trigger.monitor_id;
  if (typeof monitorId !== 'string' || monitorId === '' || monitorId.length > 100) refuse(ERROR_CODES.invalidWorkflow, 'trigger.monitor_id names the monitor whose runs start the workflow');
  return { type: 'monitor_event', monitor_id: monitorId };
}

/** The monitor a monitor_event trigger listens to; null for other triggers. */
export function triggerMonitor(trigger: TriggerDefinition): string | null {
  return trigger.type === 'monitor_event' ? (trigger.monitor_id as string) : null;
}

/** When a scheduled workflow next runs after `after` (ms), or null for other triggers (or a cron that no longer fires). */
export function nextFire(trigger: TriggerDefinition, after: number): number | null {
  if (trigger.type !== 'schedule') return null;
  return cronOf(trigger).nextRun(new Date(after))?.getTime() ?? null;
}
