import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { ERROR_CODES } from '../../shared/errors.js';
import { MAX_SECRET_CHARS, secretView } from '../../webhooks/workflow-secrets.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { requestAudit } from './audit-routes.js';
import { errorSchema } from './monitor-schemas.js';

const TAGS = ['workflows'];
const nameParams = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$', description: 'What a webhook step references as {{secrets.NAME}}' } },
} as const;
const secretSchema = {
  type: 'object',
  required: ['name', 'created_at', 'updated_at'],
  additionalProperties: false,
  properties: { name: { type: 'string' }, created_at: { type: 'string' }, updated_at: { type: 'string' } },
} as const;
const unauthorized = { 401: { description: 'No valid API key', ...errorSchema } } as const;
const forbidden = { 403: { description: 'forbidden: a read-only key', ...errorSchema } } as const;
const notFound = { 404: { description: 'workflow_secret_not_found', ...errorSchema } } as const;
const invalid = { 422: { description: 'invalid_request: a bad name, or a value that is empty or too long', ...errorSchema } } as const;

/**
 * Workflow secrets (docs/workflows.md, "Secrets"): set, list and delete. No route ever answers a
 * value: a secret is write-only, used by webhook steps by reference, resolved by the sender.
 */
export async function workflowSecretRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const secrets = deps.webhooks.workflowSecrets;
  const clock = deps.engine.clock;
  const audit = requestAudit(deps);
  app.addHook('onRequest', keyAuth(deps));

  app.put<{ Params: { name: string }; Body: { value: string } }>(
    '/api/workflow-secrets/:name',
    {
      schema: {
        operationId: 'putWorkflowSecret',
        summary: 'Create or replace a workflow secret',
        description: 'Stores the value sealed under a data key of its own; a replaced value\'s key is destroyed. The answer never holds the value.',
        tags: TAGS,
        params: nameParams,
        body: { type: 'object', required: ['value'], additionalProperties: false, properties: { value: { type: 'string', minLength: 1, maxLength: MAX_SECRET_CHARS } } },
        response: { 200: { description: 'Replaced', ...secretSchema }, 201: { description: 'Created', ...secretSchema }, ...unauthorized, ...forbidden, ...invalid },
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const { secret, created } = await secrets.put(caller.accountId, request.params.name, request.body.value, clock.now());
      await audit(request, AUDIT_ACTIONS.workflowSecretSet, secret.name);
      return reply.code(created ? 201 : 200).send(secretView(secret));
    },
  );

  app.get(
    '/api/workflow-secrets',
    {
      schema: {
        operationId: 'listWorkflowSecrets',
        summary: 'List workflow secrets',
        description: 'Names and times only, in name order; never a value.',
        tags: TAGS,
        response: { 200: { description: 'The account\'s secrets', type: 'object', required: ['secrets'], properties: { secrets: { type: 'array', items: secretSchema } } }, ...unauthorized },
      },
    },
    async (request) => ({ secrets: (await secrets.list(request.caller!.accountId)).map(secretView) }),
  );

  app.delete<{ Params: { name: string } }>(
    '/api/workflow-secrets/:name',
    {
      schema: {
        operationId: 'deleteWorkflowSecret',
        summary: 'Delete a workflow secret',
        description: 'Deletes the secret and destroys its data key: no copy of the database or data dir opens it again. Workflows that reference it keep their definition; their webhook steps send the header empty.',
        tags: TAGS,
        params: nameParams,
        response: { 200: { description: 'Deleted', type: 'object', required: ['deleted', 'name'], properties: { deleted: { type: 'boolean' }, name: { type: 'string' } } }, ...unauthorized, ...forbidden, ...notFound, ...invalid },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      if (!(await secrets.delete(caller.accountId, request.params.name))) throw httpError(404, ERROR_CODES.workflowSecretNotFound, `no workflow secret ${request.params.name}`);
      await audit(request, AUDIT_ACTIONS.workflowSecretDeleted, request.params.name);
      return { deleted: true, name: request.params.name };
    },
  );
}
