import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { ERROR_CODES } from '../../shared/errors.js';
import { STEP_TYPES, TRIGGER_TYPES, WORKFLOW_STATUSES } from '../../workflows/definition.js';
import { workflowNotFound } from '../../storage/workflow-rows.js';
import { estimateView, rerunFromStep } from '../../workflows/rerun.js';
import { templateBody, templateView, WORKFLOW_TEMPLATES } from '../../workflows/templates.js';
import { logView, runView, WorkflowService, workflowView, type WorkflowBody } from '../../workflows/workflow-service.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { requestAudit } from './audit-routes.js';
import { ingestTokenHash } from './workflow-ingest-routes.js';
import { errorSchema } from './monitor-schemas.js';

const TAGS = ['workflows'];
/** Hours a rotated-out ingest token keeps working, so senders can switch to the new one. */
export const INGEST_GRACE_HOURS = 24;
const idParams = { type: 'object', required: ['id'], properties: { id: { type: 'string', maxLength: 100 } } } as const;
const runIdParams = { type: 'object', required: ['runId'], properties: { runId: { type: 'string', maxLength: 100 } } } as const;
const iso = { type: ['string', 'null'], description: 'ISO 8601' } as const;

const stepSchema = {
  type: 'object',
  required: ['id', 'type'],
  properties: {
    id: { type: 'string', description: 'A letter, then up to 39 letters, digits or _; unique in the workflow' },
    type: { type: 'string', enum: [...STEP_TYPES], description: 'domain_lookup, ip_lookup and darkweb_lookup are refused with step_type_unsupported' },
    config: { type: 'object', additionalProperties: true, description: 'Per type, see docs/workflows.md' },
  },
} as const;

const workflowBody = {
  type: 'object',
  required: ['name', 'steps'],
  additionalProperties: false,
  properties: {
    name: { type: 'string', minLength: 1, maxLength: 200 },
    description: { type: 'string', maxLength: 2000 },
    status: { type: 'string', enum: [...WORKFLOW_STATUSES], default: 'active' },
    trigger: {
      type: 'object',
      required: ['type'],
      additionalProperties: true,
      properties: { type: { type: 'string', enum: [...TRIGGER_TYPES], description: 'manual; schedule with `cron` (five fields) and `timezone` (IANA, default UTC); webhook (the ingest URL); monitor_event with `monitor_id` (a monitor of the account: its completed runs with changes start the workflow). file_upload is refused with trigger_unsupported' } },
    },
    steps: { type: 'array', minItems: 1, maxItems: 50, items: stepSchema },
  },
} as const;

const workflowSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    status: { type: 'string', enum: [...WORKFLOW_STATUSES] },
    trigger: { type: 'object', additionalProperties: true },
    steps: { type: 'array', items: stepSchema },
    version: { type: 'integer', description: 'Starts at 1; every update is a new immutable version' },
    created_at: { type: 'string' },
    updated_at: { type: 'string' },
  },
} as const;

const runSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    workflow_id: { type: 'string' },
    workflow_name: { type: 'string' },
    workflow_version: { type: 'integer', description: 'The version the run pinned when it started' },
    status: { type: 'string', enum: ['queued', 'running', 'completed', 'failed', 'cancelled'] },
    steps_total: { type: 'integer' },
    steps_completed: { type: 'integer' },
    credits_used: { type: 'integer' },
    created_at: { type: 'string' },
    started_at: iso,
    completed_at: iso,
    duration_ms: { type: 'integer' },
    wake_at: { ...iso, description: 'When a waiting delay (or a retry) is due' },
    failed_step: { type: ['string', 'null'] },
    error: { type: ['object', 'null'], properties: { code: { type: 'string' }, message: { type: 'string' } } },
  },
} as const;

const logSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    workflow_id: { type: 'string' },
    run_id: { type: 'string' },
    step_id: { type: ['string', 'null'] },
    level: { type: 'string', enum: ['info', 'warn', 'error'] },
    message: { type: 'string' },
    metadata: { type: 'string', description: 'A string of encoded JSON: parse it separately (spec 2.7)' },
    created_at: { type: 'string' },
  },
} as const;

const errors = {
  401: { description: 'No valid API key', ...errorSchema },
  404: { description: 'workflow_not_found or workflow_run_not_found (another account\'s reads as absent)', ...errorSchema },
} as const;
const forbidden = { 403: { description: 'forbidden: a read-only key', ...errorSchema } } as const;
const invalid = {
  422: {
    description: 'invalid_request, invalid_workflow, step_type_unsupported, trigger_unsupported, invalid_reference, invalid_expression, workflow_webhook_not_found',
    ...errorSchema,
  },
} as const;
const conflict = { 409: { description: 'invalid_state: the workflow is not active, or the run cannot make this move', ...errorSchema } } as const;
/** The error answers of a route that starts a run. */
const startAnswers = {
  ...errors,
  ...forbidden,
  ...invalid,
  ...conflict,
  429: { description: 'too_many_runs: the account has its limit of runs queued or running', ...errorSchema },
} as const;

const templateSchema = {
  type: 'object',
  required: ['id', 'name', 'description', 'steps'],
  properties: { id: { type: 'string' }, name: { type: 'string' }, description: { type: 'string' }, steps: { type: 'array', items: stepSchema } },
} as const;

const rerunSchema = {
  type: 'object',
  required: ['run', 'estimate'],
  properties: {
    run: { anyOf: [runSchema, { type: 'null' }] },
    estimate: {
      type: 'object',
      required: ['credits', 'lookup_steps', 'free_repeats'],
      properties: {
        credits: { type: 'integer', description: 'The most the run can cost from the chosen step on' },
        lookup_steps: { type: 'integer', description: 'Lookup steps from the chosen step on' },
        free_repeats: { type: 'integer', description: 'Of them, those whose key is known now and already paid for within the repeat-free window' },
      },
    },
  },
} as const;

const pageQuery = (extra: Record<string, unknown>) =>
  ({
    type: 'object',
    // Bounded so that (page - 1) * limit stays a small integer: page 10^20 made an offset no store takes (500).
    properties: { page: { type: 'integer', minimum: 1, maximum: 1_000_000, default: 1 }, limit: { type: 'integer', minimum: 1, maximum: 100, default: 20 }, ...extra },
  }) as const;

/**
 * Workflows (spec 2.5-2.7, 4.8; docs/workflows.md): definitions with immutable versions, manual
 * runs, their list, logs, cancellation and redrive. Scoped to the key's account: another
 * account's workflow or run is 404. Runs execute on the workers (src/workflows/run-driver.ts).
 */
export async function workflowRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const { store, clock } = deps.engine;
  const service = new WorkflowService(store, clock, deps.settings.workflowRunsInFlight ?? 100);
  const audit = requestAudit(deps);

  app.post<{ Body: WorkflowBody }>(
    '/api/workflows',
    {
      schema: {
        operationId: 'createWorkflow',
        summary: 'Create a workflow',
        description: 'Checks the whole definition (step types, configs, references to earlier steps, expressions) and stores it as version 1. Status defaults to active.',
        tags: TAGS,
        body: workflowBody,
        response: { 201: { description: 'The workflow', ...workflowSchema }, ...errors, ...forbidden, ...invalid },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const created = await service.create(caller.accountId, request.body);
      await audit(request, AUDIT_ACTIONS.workflowCreated, created.id);
      return reply.code(201).send(workflowView(created));
    },
  );

  app.get<{ Querystring: { page: number; limit: number; status?: string } }>(
    '/api/workflows',
    {
      schema: {
        operationId: 'listWorkflows',
        summary: 'List workflows',
        description: "The account's workflows, oldest first (spec 4.8).",
        tags: TAGS,
        querystring: pageQuery({ status: { type: 'string', enum: [...WORKFLOW_STATUSES] } }),
        response: {
          200: { description: 'A page of workflows', type: 'object', properties: { workflows: { type: 'array', items: workflowSchema }, total: { type: 'integer' }, page: { type: 'integer' } } },
          ...errors,
          ...invalid,
        },
      },
    },
    async (request) => {
      const { page, limit, status } = request.query;
      const { workflows, total } = await store.workflows.list(request.caller!.accountId, { limit, offset: (page - 1) * limit, status });
      return { workflows: workflows.map(workflowView), total, page };
    },
  );

  app.get<{ Querystring: { page: number; limit: number; workflow_id?: string } }>(
    '/api/workflows/runs',
    {
      schema: {
        operationId: 'listWorkflowRuns',
        summary: 'List workflow runs',
        description: "The account's runs, newest first (spec 2.6, 4.8).",
        tags: TAGS,
        querystring: pageQuery({ workflow_id: { type: 'string', maxLength: 100 } }),
        response: {
          200: { description: 'A page of runs', type: 'object', properties: { runs: { type: 'array', items: runSchema }, total: { type: 'integer' }, page: { type: 'integer' } } },
          ...errors,
          ...invalid,
        },
      },
    },
    async (request) => {
      const { page, limit, workflow_id } = request.query;
      const { runs, total } = await store.workflows.runs(request.caller!.accountId, { limit, offset: (page - 1) * limit, workflowId: workflow_id });
      const now = clock.now();
      return { runs: runs.map((r) => runView(r, now)), total, page };
    },
  );

  app.get<{ Querystring: { run_id?: string; limit: number; offset: number } }>(
    '/api/workflows/logs',
    {
      schema: {
        operationId: 'listWorkflowLogs',
        summary: "A run's log",
        description: "The run's log entries, oldest first (spec 2.7); metadata is a string of encoded JSON. run_id is required: 400 without it.",
        tags: TAGS,
        querystring: {
          type: 'object',
          properties: { run_id: { type: 'string', maxLength: 100 }, limit: { type: 'integer', minimum: 1, maximum: 100, default: 100 }, offset: { type: 'integer', minimum: 0, default: 0 } },
        },
        response: {
          200: {
            description: 'A page of log entries',
            type: 'object',
            properties: { logs: { type: 'array', items: logSchema }, total: { type: 'integer' }, limit: { type: 'integer' }, offset: { type: 'integer' } },
          },
          400: { description: 'bad_request: run_id missing', ...errorSchema },
          ...errors,
          ...invalid,
        },
      },
    },
    async (request) => {
      const { run_id, limit, offset } = request.query;
      if (run_id === undefined || run_id === '') throw httpError(400, ERROR_CODES.badRequest, 'run_id is required');
      const { logs, total } = await store.workflows.logs(request.caller!.accountId, run_id, { limit, offset });
      return { logs: logs.map(logView), total, limit, offset };
    },
  );

  app.get<{ Params: { runId: string } }>(
    '/api/workflow-runs/:runId',
    {
      schema: { operationId: 'getWorkflowRun', summary: 'Get a workflow run', description: 'One run (spec 2.6).', tags: TAGS, params: runIdParams, response: { 200: { description: 'The run', ...runSchema }, ...errors } },
    },
    async (request) => runView(await service.getRun(request.caller!.accountId, request.params.runId), clock.now()),
  );

  for (const action of ['cancel', 'redrive'] as const) {
    app.post<{ Params: { runId: string } }>(
      `/api/workflow-runs/:runId/${action}`,
      {
        schema: {
          operationId: action === 'cancel' ? 'cancelWorkflowRun' : 'redriveWorkflowRun',
          summary: action === 'cancel' ? 'Cancel a run' : 'Redrive a failed run',
          description:
            action === 'cancel'
              ? 'Cancels a queued or running run, a waiting one included; a step in progress is not committed and its lookup not charged. 409 once the run has ended.'
              : 'Queues a failed run again from its failed step, on the version it pinned; steps that succeeded are neither redone nor charged again. 409 unless failed.',
          tags: TAGS,
          params: runIdParams,
          response: { 200: { description: 'The run', ...runSchema }, ...errors, ...forbidden, ...conflict },
        },
      },
      async (request) => {
        const caller = requireWritable(request);
        const now = clock.now();
        const run = action === 'cancel' ? await store.workflows.cancel(caller.accountId, request.params.runId, now) : await store.workflows.redrive(caller.accountId, request.params.runId, now);
        return runView(run, now);
      },
    );
  }

  app.post<{ Params: { runId: string }; Body: { from_step: string; dry_run?: boolean } }>(
    '/api/workflow-runs/:runId/rerun',
    {
      schema: {
        operationId: 'rerunWorkflowRun',
        summary: 'Run an ended run again from a step',
        description:
          'Queues a NEW run of the ended run\'s pinned version and input, starting at `from_step`: the earlier steps\' outputs are copied, neither executed nor charged again. `estimate` is the most it can cost: one credit per lookup step from there on, less those whose key is already known and paid for within the repeat-free window. With `dry_run`, only the estimate (200), no run. 409 while the run is queued or running.',
        tags: TAGS,
        params: runIdParams,
        body: {
          type: 'object',
          required: ['from_step'],
          additionalProperties: false,
          properties: { from_step: { type: 'string', minLength: 1, maxLength: 40, description: 'The id of a step of the run\'s version' }, dry_run: { type: 'boolean', default: false } },
        },
        response: {
          200: { description: 'dry_run: the estimate only', ...rerunSchema },
          202: { description: 'The new run, queued, and its estimate', ...rerunSchema },
          ...startAnswers,
        },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const rerunDeps = { store, clock, repeatFreeDays: deps.engine.repeatFreeDays, runsInFlight: deps.settings.workflowRunsInFlight ?? 100 };
      const dryRun = request.body.dry_run ?? false;
      const { run, estimate } = await rerunFromStep(rerunDeps, caller.accountId, request.params.runId, request.body.from_step, dryRun);
      return reply.code(dryRun ? 200 : 202).send({ run: run === null ? null : runView(run, clock.now()), estimate: estimateView(estimate) });
    },
  );

  app.get(
    '/api/workflow-templates',
    {
      schema: {
        operationId: 'listWorkflowTemplates',
        summary: 'List workflow templates',
        description: 'The built-in templates a workflow can be cloned from (docs/workflows.md).',
        tags: TAGS,
        response: {
          200: { description: 'The templates', type: 'object', required: ['templates'], properties: { templates: { type: 'array', items: templateSchema } } },
          401: errors[401],
        },
      },
    },
    async () => ({ templates: WORKFLOW_TEMPLATES.map(templateView) }),
  );

  app.post<{ Params: { templateId: string }; Body: { name?: string; status?: string } | null }>(
    '/api/workflow-templates/:templateId/clone',
    {
      schema: {
        operationId: 'cloneWorkflowTemplate',
        summary: 'Create a workflow from a template',
        description: 'Creates a workflow (version 1) with the template\'s steps and a manual trigger, checked as any definition is; `name` replaces the template\'s, `status` defaults to draft. Edit it with PUT like any workflow.',
        tags: TAGS,
        params: { type: 'object', required: ['templateId'], properties: { templateId: { type: 'string', maxLength: 100 } } },
        body: { type: ['object', 'null'], additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 200 }, status: { type: 'string', enum: [...WORKFLOW_STATUSES] } } },
        response: { 201: { description: 'The workflow', ...workflowSchema }, 401: errors[401], 404: { description: 'not_found: no such template', ...errorSchema }, ...forbidden, ...invalid },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const created = await service.create(caller.accountId, templateBody(request.params.templateId, { name: request.body?.name, status: request.body?.status }));
      await audit(request, AUDIT_ACTIONS.workflowCreated, created.id);
      return reply.code(201).send(workflowView(created));
    },
  );

  app.get<{ Params: { id: string } }>(
    '/api/workflows/:id',
    {
      schema: { operationId: 'getWorkflow', summary: 'Get a workflow', description: 'The workflow at its current version (spec 2.5).', tags: TAGS, params: idParams, response: { 200: { description: 'The workflow', ...workflowSchema }, ...errors } },
    },
    async (request) => workflowView(await service.get(request.caller!.accountId, request.params.id)),
  );

  app.put<{ Params: { id: string }; Body: WorkflowBody }>(
    '/api/workflows/:id',
    {
      schema: {
        operationId: 'updateWorkflow',
        summary: 'Update a workflow',
        description: 'Replaces the definition, checked as at creation, as a new immutable version; runs already started finish on the version they pinned.',
        tags: TAGS,
        params: idParams,
        body: workflowBody,
        response: { 200: { description: 'The workflow at its new version', ...workflowSchema }, ...errors, ...forbidden, ...invalid },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const updated = await service.update(caller.accountId, request.params.id, request.body);
      await audit(request, AUDIT_ACTIONS.workflowUpdated, updated.id);
      return workflowView(updated);
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/workflows/:id',
    {
      schema: {
        operationId: 'deleteWorkflow',
        summary: 'Delete a workflow',
        description: 'The workflow reads as absent from now on (a second delete is 404); its runs and logs stay readable, and runs in flight finish on their version.',
        tags: TAGS,
        params: idParams,
        response: { 200: { description: 'Deleted', type: 'object', properties: { id: { type: 'string' }, deleted: { type: 'boolean' } } }, ...errors, ...forbidden },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      await service.remove(caller.accountId, request.params.id);
      await audit(request, AUDIT_ACTIONS.workflowDeleted, request.params.id);
      return { id: request.params.id, deleted: true };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/api/workflows/:id/ingest-token',
    {
      schema: {
        operationId: 'rotateWorkflowIngestToken',
        summary: 'Make or rotate the ingest URL',
        description: `A new token of 32 random bytes for the workflow's public ingest URL, shown in this answer only (Sluice keeps its SHA-256). A token it replaces keeps working for ${INGEST_GRACE_HOURS} hours.`,
        tags: TAGS,
        params: idParams,
        response: {
          201: {
            description: 'The token and its URL path, once',
            type: 'object',
            properties: { token: { type: 'string' }, ingest_path: { type: 'string' }, previous_valid_until: { type: 'string' } },
          },
          ...errors,
          ...forbidden,
        },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const token = `wfi_${randomBytes(32).toString('base64url')}`;
      const graceUntil = clock.now() + INGEST_GRACE_HOURS * 3_600_000;
      if (!(await store.workflows.setIngestToken(caller.accountId, request.params.id, ingestTokenHash(token), graceUntil))) throw workflowNotFound(request.params.id);
      await audit(request, AUDIT_ACTIONS.workflowUpdated, request.params.id);
      return reply.code(201).send({ token, ingest_path: `/api/ingest/workflows/${token}`, previous_valid_until: new Date(graceUntil).toISOString() });
    },
  );

  app.delete<{ Params: { id: string } }>(
    '/api/workflows/:id/ingest-token',
    {
      schema: {
        operationId: 'revokeWorkflowIngestToken',
        summary: 'Revoke the ingest URL',
        description: 'The current token and any previous one in its grace period stop working at once.',
        tags: TAGS,
        params: idParams,
        response: { 200: { description: 'Revoked', type: 'object', properties: { revoked: { type: 'boolean' } } }, ...errors, ...forbidden },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      if (!(await store.workflows.revokeIngestToken(caller.accountId, request.params.id))) throw workflowNotFound(request.params.id);
      await audit(request, AUDIT_ACTIONS.workflowUpdated, request.params.id);
      return { revoked: true };
    },
  );

  app.post<{ Params: { id: string }; Body: { input?: Record<string, unknown> } | undefined }>(
    '/api/workflows/:id/run',
    {
      schema: {
        operationId: 'runWorkflow',
        summary: 'Run a workflow',
        description: `Queues a run of the workflow's current version with \`input\` (what \`input.<path>\` reads). 429 too_many_runs when the account already has its limit of runs queued or running.`,
        tags: TAGS,
        params: idParams,
        body: { type: ['object', 'null'], additionalProperties: false, properties: { input: { type: 'object', additionalProperties: true } } },
        response: {
          202: { description: 'The queued run', ...runSchema },
          ...startAnswers,
        },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const run = await service.run(caller.accountId, request.params.id, request.body?.input ?? {});
      return reply.code(202).send(runView(run, clock.now()));
    },
  );
}
