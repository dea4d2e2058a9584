import { createHash, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { ERROR_CODES } from '../../shared/errors.js';
import { runView } from '../../workflows/workflow-service.js';
import type { ApiDeps } from '../api-deps.js';
import { httpError } from '../errors.js';
import { errorSchema } from './monitor-schemas.js';

/** The largest body the ingest URL reads; fastify stops reading a longer one and answers 413. */
export const INGEST_MAX_BYTES = 65_536;
/** Deepest nesting of objects and arrays a body may have. */
export const INGEST_MAX_DEPTH = 20;
/** Requests per rolling minute per token and per client address; the account's own API limit applies as well. */
export const INGEST_PER_TOKEN = 60;
export const INGEST_PER_ADDRESS = 120;

export function ingestTokenHash(token: string): string {
  return createHash('sha256').update(token).digest('hex');
}

function depthOf(value: unknown, limit: number): number {
  const walk = (v: unknown, d: number): number => {
    if (d > limit || v === null || typeof v !== 'object') return d;
    let max = d;
    for (const child of Object.values(v)) max = Math.max(max, walk(child, d + 1));
    return max;
  };
  return walk(value, 0);
}

/**
 * The public ingest URL (docs/workflows.md): `POST /api/ingest/workflows/{token}` starts a run of
 * the token's workflow without an API key. The token is the only secret: 32 random bytes, kept as
 * a SHA-256 hash. A token that matches nothing, or a workflow that is paused, draft or deleted,
 * answers 404 alike, after the per-address limit, so guessing costs the guesser its quota.
 */
export async function workflowIngestRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const { store, clock } = deps.engine;
  const runsInFlight = deps.settings.workflowRunsInFlight ?? 100;

  async function limit(reply: FastifyReply, bucket: string, perMinute: number): Promise<void> {
    const decision = await deps.rateLimiter.take(bucket, perMinute, clock.now());
    if (decision.allowed) return;
    reply.header('Retry-After', decision.retryAfter);
    throw httpError(429, ERROR_CODES.rateLimited, 'Rate limit exceeded', { retryAfter: decision.retryAfter });
  }

  app.post<{ Params: { token: string }; Body: unknown }>(
    '/api/ingest/workflows/:token',
    {
      bodyLimit: INGEST_MAX_BYTES,
      // JSON only: another media type is refused before its body is looked at.
      preValidation: async (request) => {
        const type = String(request.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
        if (type !== 'application/json') throw httpError(415, ERROR_CODES.invalidRequest, 'the ingest URL takes application/json only');
      },
      schema: {
        operationId: 'ingestWorkflowRun',
        summary: 'Start a run through the ingest URL',
        description: `No API key: the token in the path is the credential. The JSON body (an object, at most ${INGEST_MAX_BYTES} bytes, nested at most ${INGEST_MAX_DEPTH} deep) becomes the run's input. An Idempotency-Key header makes a repeat answer the run the first request made (200) instead of starting another. Limits: ${INGEST_PER_ADDRESS} requests a minute per address, ${INGEST_PER_TOKEN} per token, and the account's API limit; 429 with Retry-After.`,
        tags: ['workflows'],
        security: [],
        params: { type: 'object', required: ['token'], properties: { token: { type: 'string', minLength: 1, maxLength: 100 } } },
        headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 200 } } },
        body: { type: 'object', additionalProperties: true },
        response: {
          200: { description: 'The run an earlier request with the same Idempotency-Key started', type: 'object', additionalProperties: true },
          202: { description: 'The queued run', type: 'object', additionalProperties: true },
          404: { description: 'not_found: no such token, or its workflow is paused, draft or deleted', ...errorSchema },
          413: { description: 'The body is longer than the cap', ...errorSchema },
          415: { description: 'Not application/json', ...errorSchema },
          422: { description: 'invalid_request: not a JSON object, or nested too deep', ...errorSchema },
          429: { description: 'rate_limited (Retry-After), or too_many_runs', ...errorSchema },
        },
      },
    },
    async (request: FastifyRequest<{ Params: { token: string }; Body: unknown }>, reply) => {
      await limit(reply, `ingest-ip:${request.ip}`, INGEST_PER_ADDRESS);
      const hash = ingestTokenHash(request.params.token);
      const wf = await store.workflows.byIngestToken(hash, clock.now());
      if (!wf || wf.status !== 'active') throw httpError(404, ERROR_CODES.notFound, 'Not found');
      await limit(reply, `ingest-token:${hash}`, INGEST_PER_TOKEN);
      const account = await store.billing.account(wf.accountId);
      await limit(reply, wf.accountId, account?.rateLimit ?? deps.settings.rateLimitPerMinute);
      if (depthOf(request.body, INGEST_MAX_DEPTH) > INGEST_MAX_DEPTH) throw httpError(422, ERROR_CODES.invalidRequest, `the body is nested deeper than ${INGEST_MAX_DEPTH}`);
      const key = request.headers['idempotency-key'];
      const runId = typeof key === 'string' ? `wfr_${createHash('sha256').update(`${wf.id}\0ingest\0${key}`).digest('hex').slice(0, 32)}` : `wfr_${randomUUID()}`;
      if (typeof key === 'string') {
        const earlier = await store.workflows.run(wf.accountId, runId);
        if (earlier) return reply.code(200).send(runView(earlier, clock.now()));
      }
      try {
        const run = await store.workflows.startRun({ id: runId, accountId: wf.accountId, workflowId: wf.id, input: JSON.stringify(request.body), maxInFlight: runsInFlight, now: clock.now() });
        return reply.code(202).send(runView(run, clock.now()));
      } catch (e) {
        // Two requests with one key at once: the second's insert meets the first's run.
        const earlier = typeof key === 'string' ? await store.workflows.run(wf.accountId, runId) : undefined;
        if (earlier) return reply.code(200).send(runView(earlier, clock.now()));
        throw e;
      }
    },
  );
}
