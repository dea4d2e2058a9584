import { MONITOR_TYPES } from '../../storage/monitor-records.js';
import { errorSchema, PAGE_PROPERTIES, runSchema } from './monitor-schemas.js';

/** The JSON shapes of the run and result routes, for validation and for the OpenAPI document. */

export const runParams = {
  type: 'object',
  required: ['id', 'runId'],
  properties: { id: { type: 'string', maxLength: 100 }, runId: { type: 'string', maxLength: 100 } },
} as const;

export const changesOnly = {
  type: 'boolean',
  default: false,
  description: 'Only the snapshots with has_changes true (true or false; anything else is 422 invalid_request)',
} as const;

export const monitoringType = { type: 'string', maxLength: 40, description: `Only runs of monitors of this type (${Object.values(MONITOR_TYPES).join(', ')})` } as const;

export const resultsQuery = { type: 'object', properties: { changes_only: changesOnly } } as const;
export const pagedResultsQuery = { type: 'object', properties: { ...PAGE_PROPERTIES, changes_only: changesOnly } } as const;

export const snapshotSchema = {
  type: 'object',
  description: "Spec 2.8's snapshot: one target's result in one run, the target under its type's key (email, phone, company, ip, domain) and under `target`",
  properties: {
    email: { type: 'string' },
    phone: { type: 'string' },
    company: { type: 'string' },
    ip: { type: 'string' },
    domain: { type: 'string' },
    target: { type: 'string' },
    data: { type: 'object', additionalProperties: true, description: "The target's result in this run: the type's fields (see the monitor's tracked_fields)" },
    changes: {
      type: ['object', 'null'],
      description: 'Per changed tracked field, its value in the previous run (`old`) and in this one (`new`); null when nothing changed (always null in a baseline run)',
      additionalProperties: { type: 'object', properties: { old: {}, new: {} } },
    },
    has_changes: { type: 'boolean' },
  },
} as const;

export const monitoringSnapshotSchema = {
  type: 'object',
  description: 'A snapshot with the run and monitor it comes from',
  properties: { run_id: { type: 'string' }, monitor_id: { type: 'string' }, type: { type: 'string', enum: Object.values(MONITOR_TYPES) }, ...snapshotSchema.properties },
} as const;

export const typedRunSchema = {
  type: 'object',
  properties: { ...runSchema.properties, type: { type: 'string', enum: Object.values(MONITOR_TYPES), description: "The monitor's type" } },
} as const;

const page = { total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' } } as const;

export const runsPageSchema = (runs: object) => ({ type: 'object', properties: { runs: { type: 'array', items: runs }, ...page } }) as const;
export const resultsPageSchema = (results: object) => ({ type: 'object', properties: { results: { type: 'array', items: results }, ...page } }) as const;

/** Error responses of the run and result routes. */
export const resultErrorResponses = {
  401: { description: 'No valid API key (agent routes answer `{c: 401, m: "bad key"}`)', ...errorSchema },
  404: { description: "monitor_not_found: no such monitor in this account; run_not_found: no such run of that monitor in this account (another account's reads as absent)", ...errorSchema },
  422: { description: 'invalid_request: a limit, offset or changes_only out of range or of the wrong type; unknown_monitor_type, monitor_type_unsupported: a type filter', ...errorSchema },
} as const;
