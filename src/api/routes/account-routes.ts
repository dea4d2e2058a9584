import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth } from '../authenticate.js';
import { apiQuotas, QUOTAS_SCHEMA, quotasView } from '../quotas.js';

const ACCOUNT_RESPONSE = {
  description: "The caller's account: its balance, what running jobs hold of it, and its rate limit",
  type: 'object',
  required: ['id', 'status', 'credits', 'reserved', 'available', 'rate_limit', 'quotas'],
  properties: {
    id: { type: 'string' },
    status: { type: 'string', enum: ['active', 'suspended'] },
    credits: { type: 'integer', description: 'The balance' },
    reserved: { type: 'integer', description: 'Credits set aside by chunks of running jobs; they are spent or come back' },
    available: { type: 'integer', description: 'credits less reserved: what a new job or lookup can spend now' },
    rate_limit: {
      type: 'object',
      required: ['per_minute', 'remaining', 'reset_at'],
      properties: {
        per_minute: { type: 'integer', description: 'Requests per rolling minute, shared by all keys of the account' },
        remaining: { type: 'integer', description: 'Requests left in the current window, this one counted (X-RateLimit-Remaining)' },
        reset_at: { type: 'integer', description: 'Unix seconds when a request slot frees up (X-RateLimit-Reset)' },
      },
    },
    quotas: QUOTAS_SCHEMA,
  },
} as const;

/** Self-service: what an API customer would otherwise have to ask an operator for. Any role may read it. */
export async function accountRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const quotas = apiQuotas(deps);

  app.get('/api/account', { schema: { tags: ['account'], description: ACCOUNT_RESPONSE.description, response: { 200: ACCOUNT_RESPONSE } } }, async (request, reply) => {
    const accountId = request.caller!.accountId;
    const { billing } = deps.engine;
    const account = await billing.requireAccount(accountId);
    // What `sluice accounts show` calls "not reserved", from one read, so that the three add up
    // even while chunks reserve and spend.
    const { credits, reserved } = await billing.balance(accountId);
    return {
      id: account.id,
      status: account.status,
      credits,
      reserved,
      available: credits - reserved,
      // keyAuth has just counted this request in the shared window: its headers are the state now,
      // with no second round trip to the limiter.
      rate_limit: {
        per_minute: Number(reply.getHeader('X-RateLimit-Limit')),
        remaining: Number(reply.getHeader('X-RateLimit-Remaining')),
        reset_at: Number(reply.getHeader('X-RateLimit-Reset')),
      },
      quotas: await quotasView(quotas, accountId),
    };
  });
}
