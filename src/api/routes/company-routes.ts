import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { companyPipeline } from '../../../pipelines/company.js';
import type { EngineDeps } from '../../jobs/engine-deps.js';
import { lookupBatch } from '../../jobs/lookup-batch.js';
import { assertNever, singleLookup, type PricedCall } from '../../jobs/single-lookup.js';
import { collapseBlanks } from '../../lookups/company/company-names.js';
import { COMPANY_KIND, confidentResults, type CompanyProfile, type CompanyResult } from '../../lookups/company/company-profile.js';
import { COMPANY_MATCH_THRESHOLD } from '../../lookups/company/company-score.js';
import { DAY_MS } from '../../shared/clock.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { httpError } from '../errors.js';

/** Spec 8: bulk company search takes at most 100 queries per request. */
export const MAX_BULK_QUERIES = 100;
/** 100 queries of 200 characters, each up to 4 bytes in UTF-8, fit with room for the JSON around them. */
const BULK_BODY_LIMIT = 128 * 1024;

const AGENT_DESCRIPTION = `Body: \`query\`, a company name or domain. Answers \`company\`, \`results\` (candidate companies with a \`score\` of at least ${COMPANY_MATCH_THRESHOLD}, from 0 to 1, best first, at most 5), \`profile\` (the best, or null), \`total\` and \`credits\`: 1 credit per result returned, 0 when nothing is found.`;
const BULK_DESCRIPTION = `Body: \`queries\`, 1 to ${MAX_BULK_QUERIES} company names or domains. Each result's \`company\` is the best match with a \`score\` of at least ${COMPANY_MATCH_THRESHOLD}, or null. 1 credit per query (spec 8), whether or not it found a company, all or nothing; a search that could not run (502, 503) charges nothing.`;
const BULK_BODY = {
  type: 'object',
  required: ['queries'],
  properties: { queries: { type: 'array', minItems: 1, maxItems: MAX_BULK_QUERIES, items: { type: 'string' } } },
} as const;

const insufficient = () => httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
const unavailable = () => httpError(503, ERROR_CODES.providerUnavailable, 'Company search is temporarily unavailable');
const failed = () => httpError(502, ERROR_CODES.lookupFailed, 'Company search failed. Please try again.');

/**
 * Spec 8, "1 per result returned": the answer's confident candidates cost 1 credit each. An
 * account that cannot pay for them all gets as many as it can pay for, best first; nothing found
 * is free.
 */
const PER_RESULT: PricedCall<CompanyResult> = {
  price(result, available) {
    const confident = confidentResults(result);
    if (confident.length === 0) return { result: { match: null, results: [] }, credits: 0 };
    if (available < 1) return undefined;
    const results = confident.slice(0, available);
    return { result: { ...result, results }, credits: results.length };
  },
};

/** Spec 4.5 and 4.7: the agent company search and bulk company search. */
export async function companyRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));

  app.post<{ Body: unknown }>('/api/agent/company', { schema: { tags: ['company'], description: AGENT_DESCRIPTION } }, async (request) => {
    const query = (request.body as { query?: unknown } | null | undefined)?.query;
    if (typeof query !== 'string' || query.trim() === '') throw httpError(400, ERROR_CODES.invalidRequest, 'query is required: a company name or domain');
    const answer = await singleLookup(deps.engine, companyPipeline, request.caller!.accountId, query, PER_RESULT);
    if (answer.ok) return agentAnswer(collapseBlanks(query), answer.result, answer.credits);
    switch (answer.reason) {
      case 'invalid':
        throw httpError(400, answer.code as ErrorCode, 'Invalid query: give a company name or domain of 200 characters or fewer');
      case 'insufficient_credits':
        throw insufficient();
      case 'unavailable':
        throw unavailable();
      case 'failed':
        throw failed();
      default:
        return assertNever(answer);
    }
  });

  app.post<{ Body: { queries: string[] } }>(
    '/api/bulk-company-search',
    { bodyLimit: BULK_BODY_LIMIT, schema: { tags: ['company'], description: BULK_DESCRIPTION, body: BULK_BODY } },
    async (request) => {
      const { queries } = request.body;
      const keys = queries.map((query, i) => {
        const normalised = companyPipeline.normalise(query);
        if (!normalised.ok) throw httpError(422, normalised.code as ErrorCode, `Invalid request: queries[${i}]: ${normalised.message}`);
        return normalised.key;
      });
      const { answers, credits } = await searchAll(deps.engine, request.caller!.accountId, keys);
      return {
        results: queries.map((query, i) => ({ query, company: bulkCompany(answers.get(keys[i]!)!) })),
        credits_used: credits,
      };
    },
  );
}

/**
 * Every query answered, then 1 credit per query (spec 8, repeats included) in one charge: all or
 * nothing, so a 402 or a failed lookup costs nothing. A balance short of the price is refused
 * before the lookups, and one that shrank meanwhile by the charge's transaction. Answers come from the shared result cache where
 * fresh, as a single lookup's do.
 */
async function searchAll(deps: EngineDeps, accountId: string, keys: string[]): Promise<{ answers: Map<string, CompanyResult>; credits: number }> {
  if ((await deps.billing.available(accountId)) < keys.length) throw insufficient();
  const provider = deps.providers.get(COMPANY_KIND);
  if (!provider) throw unavailable();
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
  const distinct = [...new Set(keys)];
  const answers = await deps.results.getMany<CompanyResult>(COMPANY_KIND, distinct, since);
  const misses = distinct.filter((key) => !answers.has(key));
  if (misses.length > 0) {
    for (const [key, outcome] of await lookupBatch(misses, { accountId, provider, limiters: deps.limiters })) {
      if (!outcome.ok) throw outcome.code === ERROR_CODES.providerUnavailable ? unavailable() : failed();
      answers.set(key, outcome.result as CompanyResult);
    }
  }
  // Spec 8: 1 per query. A search that ran and found no confident match has answered its query; a
  // transient failure threw above, before any charge.
  const credits = keys.length;
  const paid = await deps.billing.commitLookup({
    accountId,
    kind: COMPANY_KIND,
    charge: { type: 'flat', amount: credits, callId: randomUUID() },
    cache: misses.map((key) => ({ kind: COMPANY_KIND, key, result: answers.get(key) })),
    now: deps.clock.now(),
  });
  if (!paid.ok) throw insufficient();
  return { answers, credits };
}

/**
 * Spec 4.5's shape. The spec's `results` are people (email, name, role, linkedin); the directory
 * holds companies, so they are the candidate companies. Profile fields the directory has no
 * column for come from its extra columns of the same name, else null; officers and shareholders
 * are always empty.
 */
function agentAnswer(query: string, result: CompanyResult, credits: number) {
  const results = confidentResults(result);
  const best = results[0];
  return {
    company: query,
    results: results.map((c) => ({ name: c.name, domain: c.domain, industry: c.industry, employee_count: c.employee_count, country: c.country, website: c.website, score: c.score })),
    profile: best === undefined ? null : agentProfile(best),
    total: results.length,
    credits,
  };
}

function agentProfile(c: CompanyProfile) {
  return {
    name: c.name,
    domain: c.domain,
    description: c.description,
    industry: c.industry,
    status: c.extra.status ?? null,
    employee_count: c.employee_count,
    revenue: c.extra.revenue ?? null,
    country: c.country,
    website: c.website,
    ticker: c.extra.ticker ?? null,
    linkedin: c.extra.linkedin ?? null,
    officers: [],
    shareholders: [],
  };
}

/** Spec 4.7's `company{name, industry, size, ...}`: size is the employee count; null without a confident match. */
function bulkCompany(result: CompanyResult) {
  const c = confidentResults(result)[0];
  if (c === undefined) return null;
  return { name: c.name, industry: c.industry, size: c.employee_count, domain: c.domain, country: c.country, website: c.website, score: c.score };
}
