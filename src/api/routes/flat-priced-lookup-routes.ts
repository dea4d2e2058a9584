import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Pipeline } from '../../../pipelines/pipeline.js';
import { lookupBatch } from '../../jobs/lookup-batch.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';

/** One route's OpenAPI face: what the operation catalog and the document show for it. */
export interface RouteDoc {
  path: string;
  operationId: string;
  summary: string;
  description: string;
}

/**
 * A lookup sold at 1 credit per answer, repeats included, with an agent route for one query and a
 * bulk route for many (the IP network lookup and the domain report). Its texts are the lookup's own;
 * the rules (what is billed, in which order, what each failure answers) are the same for each.
 */
export interface FlatPricedLookup<R> {
  pipeline: Pipeline<R>;
  /** The agent route's body field (`ip`, `domain`) and its longest accepted value. */
  field: string;
  fieldMaxLength: number;
  tag: string;
  single: RouteDoc & { response: object };
  bulk: RouteDoc & { body: object; response: object };
  errorResponses: Record<number, object>;
  /** The lookup as messages name it: `IP network lookup`, `Domain report`. */
  name: string;
  /** 400 answers: no field, and a value the pipeline refuses. */
  requiredMessage: string;
  invalidMessage: string;
  /** A bulk item whose lookup failed (never billed). */
  itemFailedMessage: string;
}

const INSUFFICIENT = 'Insufficient credits. Please top up your account.';
const insufficient = () => httpError(402, ERROR_CODES.insufficientCredits, INSUFFICIENT);

/** Spec 4.5's agent lookup and spec 4.7's bulk search of one flat-priced lookup. */
export async function flatPricedLookupRoutes<R>(app: FastifyInstance, deps: ApiDeps, lookup: FlatPricedLookup<R>): Promise<void> {
  const { pipeline, field, single, bulk, name } = lookup;
  app.addHook('onRequest', keyAuth(deps));

  app.post<{ Body: Record<string, unknown> | undefined }>(
    single.path,
    {
      schema: {
        operationId: single.operationId,
        summary: single.summary,
        description: single.description,
        tags: [lookup.tag],
        body: { type: 'object', properties: { [field]: { type: 'string', maxLength: lookup.fieldMaxLength } } },
        response: { 200: single.response, ...lookup.errorResponses },
      },
    },
    async (request) => {
      const query = request.body?.[field];
      if (typeof query !== 'string' || query.trim() === '') throw httpError(400, ERROR_CODES.invalidRequest, lookup.requiredMessage);
      const answer = await singleLookup(deps.engine, pipeline, request.caller!.accountId, query, 'per_call');
      if (answer.ok) return { query, ...answer.result, credits: answer.credits };
      switch (answer.reason) {
        case 'invalid':
          throw httpError(400, answer.code as ErrorCode, lookup.invalidMessage);
        case 'insufficient_credits':
          throw insufficient();
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, `${name} is temporarily unavailable`);
        case 'failed':
          throw httpError(502, ERROR_CODES.lookupFailed, `${name} failed. Please try again.`);
        default:
          return assertNever(answer);
      }
    },
  );

  app.post<{ Body: { queries: string[] } }>(
    bulk.path,
    {
      schema: {
        operationId: bulk.operationId,
        summary: bulk.summary,
        description: bulk.description,
        tags: [lookup.tag],
        body: bulk.body,
        response: { 200: bulk.response, ...lookup.errorResponses },
      },
    },
    async (request) => {
      const accountId = request.caller!.accountId;
      const { queries } = request.body;
      const engine = deps.engine;
      if ((await engine.billing.available(accountId)) <= 0) throw insufficient();
      const provider = engine.providers.get(pipeline.lookupKind);
      if (!provider) throw httpError(503, ERROR_CODES.providerUnavailable, `${name} is temporarily unavailable`);
      const normalised = queries.map((q) => pipeline.normalise(q));
      const keys = [...new Set(normalised.flatMap((n) => (n.ok ? [n.key] : [])))];
      const outcomes = keys.length === 0 ? new Map() : await lookupBatch(keys, { accountId, provider, limiters: engine.limiters });
      // Paid in order while the balance lasts, in one charge: a short balance costs the items before it only.
      const available = await engine.billing.available(accountId);
      let paid = 0;
      const results = queries.map((query, i) => {
        const n = normalised[i]!;
        if (!n.ok) return { query, error: { code: n.code, message: n.message } };
        const outcome = outcomes.get(n.key)!;
        if (!outcome.ok) return { query, error: { code: outcome.code, message: lookup.itemFailedMessage } };
        if (paid >= available) return { query, error: { code: ERROR_CODES.insufficientCredits, message: INSUFFICIENT } };
        paid++;
        return { query, ...(outcome.result as R), credits: 1 };
      });
      if (paid > 0) {
        const charged = await engine.billing.commitLookup({ accountId, kind: pipeline.lookupKind, charge: { type: 'flat', amount: paid, callId: randomUUID() }, cache: [], now: engine.clock.now() });
        if (!charged.ok) throw insufficient();
      }
      return { results, credits_used: paid };
    },
  );
}
