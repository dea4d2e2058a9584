import type { FastifyInstance } from 'fastify';
import { parseCountry } from '../../../pipelines/phone-breaches.js';
import { monitorType, MONITOR_TYPE_SPECS } from '../../monitors/monitor-types.js';
import { invalidView, monitoringTargetView, monitorView, RUN_BILLING, runView } from '../../monitors/monitor-views.js';
import type { TargetsOutcome } from '../../monitors/monitor-service.js';
import { ERROR_CODES } from '../../shared/errors.js';
import { MONITOR_STATUSES, type MonitorStatus, type MonitorType } from '../../storage/monitor-records.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import {
  errorResponses,
  errorSchema,
  idParams,
  invalidSchema,
  monitorBody,
  monitorPatchBody,
  monitorSchema,
  PAGE_PROPERTIES,
  removeTargetsBody,
  runSchema,
  targetPageSchema,
  targetsBody,
  typeFilter,
} from './monitor-schemas.js';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { requestAudit } from './audit-routes.js';

interface MonitorBody {
  name: string;
  type: string;
  frequency: string;
  tracked_fields?: string[];
  change_detection?: string;
  start_at?: string;
  list_id?: string;
  targets?: string[];
  default_country?: string;
}

type Page = { limit: number; offset: number };

const targetsOutcomeSchema = {
  type: 'object',
  properties: {
    added: { type: 'integer' },
    already_present: { type: 'integer' },
    duplicates: { type: 'integer', description: 'Given targets that repeated an earlier one once normalised' },
    invalid: invalidSchema,
  },
} as const;

const conflict = { 409: { description: 'invalid_state: a list still importing, or a paused monitor run by hand; run_in_progress: a run of the monitor is queued or running; quota_exceeded: the account holds as many monitors, or targets, as its quotas allow (GET /api/account shows them), and nothing is added', ...errorSchema } };
const tooMany = { 413: { description: 'too_many_targets: a monitor holds at most 1,000,000 targets', ...errorSchema } };

/** `default_country` checked as the bulk upload checks it. */
export function defaultCountryOf(raw: string | undefined): string | undefined {
  if (raw === undefined) return undefined;
  const country = parseCountry(raw);
  if (country === undefined) throw httpError(422, ERROR_CODES.unknownCountry, `default_country must be an ISO 3166-1 alpha-2 code such as DE, got "${raw.slice(0, 40)}"`);
  return country;
}

function startAtOf(raw: string | undefined): number | undefined {
  if (raw === undefined) return undefined;
  const ms = Date.parse(raw);
  if (!/^\d{4}-\d\d-\d\d/.test(raw) || Number.isNaN(ms)) throw httpError(422, ERROR_CODES.invalidRequest, `start_at must be an ISO 8601 time such as 2026-03-01T09:00:00Z, got "${raw.slice(0, 40)}"`);
  return ms;
}

function outcomeView(outcome: TargetsOutcome) {
  return { added: outcome.added, already_present: outcome.present, duplicates: outcome.duplicates, invalid: invalidView(outcome.invalid) };
}

/**
 * Monitors (spec 2.8, 4.8): create, read, list, update, delete, pause, resume, their targets, a
 * run by hand, and every watched target of the account. Every route is scoped to the key's
 * account: another account's monitor is 404, as if it did not exist.
 */
export async function monitorRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);
  const service = deps.monitors;

  app.post<{ Body: MonitorBody }>(
    '/api/monitors',
    {
      schema: {
        tags: ['monitors'],
        description: `Creates an active monitor whose first run (the baseline) is due at start_at (default now). Billing of runs: ${RUN_BILLING}; credits_per_run is the most a run of the current targets costs (one credit per target; targets paid for within the window cost nothing).`,
        body: monitorBody,
        response: {
          201: { description: 'The monitor, its billing rule, and what became of the targets given', type: 'object', properties: { ...monitorSchema.properties, billing: { type: 'string' }, targets: targetsOutcomeSchema } },
          ...errorResponses,
          ...conflict,
          ...tooMany,
        },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const body = request.body;
      const { monitor, targets } = await service.create(caller.accountId, {
        name: body.name.trim(),
        type: body.type,
        frequency: body.frequency,
        trackedFields: body.tracked_fields,
        changeDetection: body.change_detection,
        startAt: startAtOf(body.start_at),
        listId: body.list_id,
        targets: body.targets,
        defaultCountry: defaultCountryOf(body.default_country),
      });
      await audit(request, AUDIT_ACTIONS.monitorCreated, monitor.id);
      return reply.code(201).send({ ...monitorView(monitor), billing: RUN_BILLING, targets: outcomeView(targets) });
    },
  );

  app.get<{ Querystring: Page & { type?: string; status?: MonitorStatus } }>(
    '/api/monitors',
    {
      schema: {
        tags: ['monitors'],
        querystring: { type: 'object', properties: { ...PAGE_PROPERTIES, type: typeFilter, status: { type: 'string', enum: Object.values(MONITOR_STATUSES) } } },
        response: {
          200: { description: 'The account\'s monitors, oldest first', type: 'object', properties: { monitors: { type: 'array', items: monitorSchema }, total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' } } },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { limit, offset, type, status } = request.query;
      const { monitors, total } = await deps.engine.store.monitors.list(request.caller!.accountId, { limit, offset, type: type as MonitorType | undefined, status });
      return { monitors: monitors.map(monitorView), total, limit, offset };
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/monitors/:id',
    { schema: { tags: ['monitors'], params: idParams, response: { 200: { description: 'The monitor', ...monitorSchema }, ...errorResponses } } },
    async (request) => monitorView(await service.get(request.caller!.accountId, request.params.id)),
  );

  app.patch<{ Params: { id: string }; Body: Pick<MonitorBody, 'name' | 'frequency' | 'tracked_fields' | 'change_detection'> }>(
    '/api/monitors/:id',
    {
      schema: {
        tags: ['monitors'],
        description: 'Changes the fields given. A new frequency keeps next_run_at and counts its periods from it.',
        params: idParams,
        body: monitorPatchBody,
        response: { 200: { description: 'The monitor as changed', ...monitorSchema }, ...errorResponses },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const body = request.body;
      const monitor = await service.update(caller.accountId, request.params.id, {
        name: body.name?.trim(),
        frequency: body.frequency,
        trackedFields: body.tracked_fields,
        changeDetection: body.change_detection,
      });
      await audit(request, AUDIT_ACTIONS.monitorUpdated, monitor.id);
      return monitorView(monitor);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/monitors/:id',
    {
      schema: {
        tags: ['monitors'],
        description: 'Deletes the monitor with its targets, runs and snapshots.',
        params: idParams,
        response: { 200: { description: 'Deleted', type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }, ...errorResponses },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      await service.remove(caller.accountId, request.params.id);
      await audit(request, AUDIT_ACTIONS.monitorDeleted, request.params.id);
      return { id: request.params.id, deleted: true };
    },
  );

  for (const action of ['pause', 'resume'] as const) {
    app.post<{ Params: { id: string } }>(
      `/api/monitors/:id/${action}`,
      {
        schema: {
          tags: ['monitors'],
          description:
            action === 'pause'
              ? 'Paused: the schedule skips the monitor and it cannot be run by hand. Idempotent.'
              : 'Active again. Periods that passed while paused get no run: next_run_at is the first period start after now (or stays, if still ahead). Idempotent.',
          params: idParams,
          response: { 200: { description: 'The monitor', ...monitorSchema }, ...errorResponses },
        },
      },
      async (request) => {
        const caller = requireWritable(request);
        const monitor = await service[action](caller.accountId, request.params.id);
        await audit(request, action === 'pause' ? AUDIT_ACTIONS.monitorPaused : AUDIT_ACTIONS.monitorResumed, monitor.id);
        return monitorView(monitor);
      },
    );
  }

  app.get<{ Params: { id: string }; Querystring: Page }>(
    '/api/monitors/:id/targets',
    {
      schema: {
        tags: ['monitors'],
        params: idParams,
        querystring: { type: 'object', properties: PAGE_PROPERTIES },
        response: {
          200: targetPageSchema('The monitor\'s targets in target order, each under its type\'s key (email, phone, company, ip, domain) and under `target`', { added_at: { type: 'string' } }),
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const accountId = request.caller!.accountId;
      const monitor = await service.get(accountId, request.params.id);
      const { limit, offset } = request.query;
      const { targets, total } = await deps.engine.store.monitors.targets(accountId, monitor.id, { limit, offset });
      const key = MONITOR_TYPE_SPECS[monitor.type].key;
      return { targets: targets.map((t) => ({ [key]: t.target, target: t.target, added_at: new Date(t.addedAt).toISOString() })), total, limit, offset };
    },
  );

  app.post<{ Params: { id: string }; Body: { targets?: string[]; list_id?: string; default_country?: string } }>(
    '/api/monitors/:id/targets',
    {
      schema: {
        tags: ['monitors'],
        description: 'Adds `targets` (read as the type\'s bulk job reads them) and/or a ready list\'s targets (`list_id`). Targets already watched are counted, not added twice; invalid ones are counted and shown, never added.',
        params: idParams,
        body: targetsBody,
        response: {
          200: { description: 'What became of the targets', type: 'object', properties: { ...targetsOutcomeSchema.properties, target_count: { type: 'integer' } } },
          ...errorResponses,
          ...conflict,
          ...tooMany,
        },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const body = request.body;
      const outcome = await service.addTargets(caller.accountId, request.params.id, { targets: body.targets, listId: body.list_id, defaultCountry: defaultCountryOf(body.default_country) });
      const monitor = await service.get(caller.accountId, request.params.id);
      await audit(request, AUDIT_ACTIONS.monitorTargetsAdded, monitor.id);
      return { ...outcomeView(outcome), target_count: monitor.targetCount };
    },
  );

  app.delete<{ Params: { id: string }; Body: { targets: string[]; default_country?: string } }>(
    '/api/monitors/:id/targets',
    {
      schema: {
        tags: ['monitors'],
        description: 'Removes `targets` (a JSON body), read as when they were added.',
        params: idParams,
        body: removeTargetsBody,
        response: {
          200: {
            description: 'How many were removed, how many the monitor did not hold, and the invalid ones',
            type: 'object',
            properties: { removed: { type: 'integer' }, absent: { type: 'integer' }, invalid: invalidSchema, target_count: { type: 'integer' } },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const body = request.body;
      const outcome = await service.removeTargets(caller.accountId, request.params.id, { targets: body.targets, defaultCountry: defaultCountryOf(body.default_country) });
      const monitor = await service.get(caller.accountId, request.params.id);
      await audit(request, AUDIT_ACTIONS.monitorTargetsRemoved, monitor.id);
      return { removed: outcome.removed, absent: outcome.absent, invalid: invalidView(outcome.invalid), target_count: monitor.targetCount };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/agent/monitors/:id/run',
    {
      schema: {
        tags: ['monitors'],
        description: 'Queues a run now, with API-key auth (spec 4.8). The schedule is not moved: next_run_at stays.',
        params: idParams,
        response: { 202: { description: 'The queued run', ...runSchema }, ...errorResponses, ...conflict, 402: { description: 'insufficient_credits: the balance is 0, as a bulk upload would be refused', ...errorSchema } },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      // As a bulk upload at balance 0 (issue 27, finding 3): refused before anything is queued or split.
      if ((await deps.engine.billing.requireAccount(caller.accountId)).credits <= 0) {
        throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
      }
      const run = await service.run(caller.accountId, request.params.id);
      await audit(request, AUDIT_ACTIONS.monitorRunStarted, request.params.id);
      return reply.code(202).send(runView(run));
    },
  );

  app.get<{ Querystring: Page & { type?: string } }>(
    '/api/monitoring/targets',
    {
      schema: {
        tags: ['monitors'],
        description: 'Every target the account\'s monitors watch, once each with the monitors that watch it, by type then target.',
        querystring: { type: 'object', properties: { ...PAGE_PROPERTIES, type: { type: 'string', maxLength: 40, description: 'Only this monitor type (email, phone, company)' } } },
        response: {
          200: {
            description: 'A page of watched targets and their total',
            type: 'object',
            properties: {
              targets: {
                type: 'array',
                items: {
                  type: 'object',
                  properties: {
                    email: { type: 'string' },
                    phone: { type: 'string' },
                    company: { type: 'string' },
                    ip: { type: 'string' },
                    domain: { type: 'string' },
                    target: { type: 'string' },
                    type: { type: 'string' },
                    monitor_ids: { type: 'array', items: { type: 'string' } },
                    added_at: { type: 'string' },
                  },
                },
              },
              total: { type: 'integer' },
              limit: { type: 'integer' },
              offset: { type: 'integer' },
            },
          },
          ...errorResponses,
        },
      },
    },
    async (request) => {
      const { limit, offset } = request.query;
      const type = request.query.type === undefined ? undefined : monitorType(request.query.type);
      const { targets, total } = await deps.engine.store.monitors.monitoringTargets(request.caller!.accountId, { limit, offset, type });
      return { targets: targets.map(monitoringTargetView), total, limit, offset };
    },
  );
}
