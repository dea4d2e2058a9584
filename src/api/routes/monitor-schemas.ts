import { CHANGE_MODES, FREQUENCIES, MAX_TARGETS, MONITOR_STATUSES, MONITOR_TYPES, RUN_STATUSES, UNSUPPORTED_MONITOR_TYPES } from '../../storage/monitor-records.js';
import { MONITOR_TYPE_SPECS } from '../../monitors/monitor-types.js';
import { RUN_BILLING } from '../../monitors/monitor-views.js';

/** The JSON shapes of the monitor and list routes, for validation and for the OpenAPI document. */

const TYPES = Object.values(MONITOR_TYPES);
const nullable = (type: string) => ({ type: [type, 'null'] });
const FIELDS_HELP = TYPES.map((t) => `${t}: ${MONITOR_TYPE_SPECS[t].fields.join(', ')}`).join('; ');

export const TYPE_HELP =
  `Monitor type: ${TYPES.join(', ')}. The spec's ${UNSUPPORTED_MONITOR_TYPES.join(', ')} are refused with 422 monitor_type_unsupported until their lookups exist; ` +
  'any other value is 422 unknown_monitor_type.';

export const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;

export const PAGE_PROPERTIES = {
  limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 },
  offset: { type: 'integer', minimum: 0, default: 0 },
} as const;

/** A page of a monitor's or a list's targets, each under its type's key and under `target`, with `extra` fields of its own. */
export function targetPageSchema(description: string, extra: Record<string, { type: string }>) {
  const keys = { email: { type: 'string' }, phone: { type: 'string' }, company: { type: 'string' }, ip: { type: 'string' }, domain: { type: 'string' }, target: { type: 'string' } };
  return {
    description,
    type: 'object',
    properties: {
      targets: { type: 'array', items: { type: 'object', properties: { ...keys, ...extra } } },
      total: { type: 'integer' },
      limit: { type: 'integer' },
      offset: { type: 'integer' },
    },
  } as const;
}

export const typeFilter = { type: 'string', enum: TYPES, description: 'Only this monitor type' } as const;

export const invalidSchema = {
  type: 'object',
  description: 'Targets that were not valid: never added, every one counted by error code, the first 20 shown with their position (1-based array index or CSV data row)',
  properties: {
    count: { type: 'integer' },
    by_code: { type: 'object', additionalProperties: { type: 'integer' } },
    examples: {
      type: 'array',
      items: { type: 'object', properties: { row: { type: 'integer' }, value: { type: 'string' }, code: { type: 'string' } } },
    },
  },
} as const;

export const monitorSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    type: { type: 'string', enum: TYPES },
    frequency: { type: 'string', enum: Object.values(FREQUENCIES) },
    tracked_fields: { type: 'array', items: { type: 'string' } },
    change_detection: { type: 'string', enum: Object.values(CHANGE_MODES) },
    status: { type: 'string', enum: Object.values(MONITOR_STATUSES) },
    target_count: { type: 'integer' },
    credits_per_run: { type: 'integer', description: `The most a run of the current targets costs, billed ${RUN_BILLING}` },
    next_run_at: { ...nullable('string'), description: 'Start of the next scheduled run; null while paused' },
    last_run_at: { ...nullable('string'), description: 'When the latest run (scheduled or by hand) was queued' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
  },
} as const;

export const runSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    monitor_id: { type: 'string' },
    status: { type: 'string', enum: Object.values(RUN_STATUSES) },
    trigger: { type: 'string', enum: ['schedule', 'manual'] },
    period_start: { ...nullable('string'), description: 'The schedule period the run is for; null for a run by hand' },
    job_id: nullable('string'),
    created_at: { type: 'string' },
    started_at: nullable('string'),
    finished_at: nullable('string'),
    stats: {
      type: 'object',
      properties: {
        total_records: nullable('integer'),
        changes_detected: nullable('integer'),
        credits_used: nullable('integer'),
        duration_ms: nullable('integer'),
      },
    },
  },
} as const;

export const listSchema = {
  type: 'object',
  properties: {
    id: { type: 'string', format: 'uuid' },
    name: { type: 'string' },
    type: { type: 'string', enum: TYPES },
    status: { type: 'string', enum: ['importing', 'ready'], description: 'ready once every target is in; an importing list seeds no monitor' },
    target_count: { type: 'integer' },
    invalid_count: { type: 'integer' },
    duplicate_count: { type: 'integer' },
    invalid_by_code: { type: 'object', additionalProperties: { type: 'integer' } },
    created_at: { type: 'string' },
  },
} as const;

const targetItems = { type: 'array', maxItems: 10_000, items: { type: 'string', maxLength: 1000 } } as const;
const defaultCountry = {
  type: 'string',
  pattern: '^[A-Za-z]{2}$',
  description: 'phone: ISO 3166-1 alpha-2 country for numbers written without a country code',
} as const;

export const monitorBody = {
  type: 'object',
  required: ['name', 'type', 'frequency'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    type: { type: 'string', maxLength: 40, description: TYPE_HELP },
    frequency: { type: 'string', enum: Object.values(FREQUENCIES), description: 'weekly and biweekly are 7 and 14 days; monthly and quarterly are calendar months (UTC), counted from start_at' },
    tracked_fields: { type: 'array', items: { type: 'string', maxLength: 100 }, description: `Fields a run compares; all of the type's by default. ${FIELDS_HELP}. Others: 422 unknown_tracked_field.` },
    change_detection: {
      type: 'string',
      enum: Object.values(CHANGE_MODES),
      description: 'any_change (default): every difference in a tracked field; new_only: only what appears (an empty field set, a number that grew, list items added)',
    },
    start_at: { type: 'string', maxLength: 40, description: 'ISO 8601: the first run and the anchor of the periods; default now (the first run is the baseline)' },
    list_id: { type: 'string', maxLength: 100, description: 'A ready list of the same type whose targets the monitor starts with' },
    targets: { ...targetItems, description: 'Targets, read and normalised as the bulk job of the type reads them' },
    default_country: defaultCountry,
  },
} as const;

export const monitorPatchBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: {
    name: monitorBody.properties.name,
    frequency: monitorBody.properties.frequency,
    tracked_fields: monitorBody.properties.tracked_fields,
    change_detection: monitorBody.properties.change_detection,
  },
} as const;

export const targetsBody = {
  type: 'object',
  additionalProperties: false,
  minProperties: 1,
  properties: { targets: targetItems, list_id: monitorBody.properties.list_id, default_country: defaultCountry },
} as const;

export const removeTargetsBody = {
  type: 'object',
  required: ['targets'],
  additionalProperties: false,
  properties: { targets: targetItems, default_country: defaultCountry },
} as const;

export const listJsonBody = {
  type: 'object',
  required: ['name', 'type', 'targets'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    type: { type: 'string', maxLength: 40, description: TYPE_HELP },
    targets: targetItems,
    default_country: defaultCountry,
  },
} as const;

export const listForm = {
  type: 'object',
  required: ['name', 'type', 'file'],
  properties: {
    name: { type: 'string' },
    type: { type: 'string', description: TYPE_HELP },
    column: { type: 'string', description: "Header of the target column; default: the type's own (email, phone, company) or an alias" },
    default_country: defaultCountry,
    country_column: { type: 'string', description: "phone: header of the column holding each row's country" },
    delimiter: { type: 'string', description: 'comma, semicolon, tab or pipe; default detected' },
    encoding: { type: 'string', description: 'utf-8, utf-16le, utf-16be, windows-1252 or iso-8859-1; default detected' },
    file: { type: 'string', format: 'binary', description: `The CSV, up to ${MAX_TARGETS} targets; send it after the other fields` },
  },
} as const;

/** Open, so that a body of another shape (the agent family's `{c, m}` on 401) is sent as it is. */
export const errorSchema = {
  type: 'object',
  additionalProperties: true,
  properties: { error: { type: 'string' }, code: { type: 'string' } },
} as const;

/** Error responses every route of the group may give. */
export const errorResponses = {
  401: { description: 'No valid API key (agent routes answer `{c: 401, m: "bad key"}`)', ...errorSchema },
  404: { description: 'No such monitor or list in this account (another account\'s reads as absent): monitor_not_found, list_not_found', ...errorSchema },
  422: { description: 'Invalid request: invalid_request, unknown_monitor_type, monitor_type_unsupported, unknown_tracked_field, unknown_country', ...errorSchema },
} as const;
