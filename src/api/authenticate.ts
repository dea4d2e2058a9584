import type { FastifyReply, FastifyRequest } from 'fastify';
import type { ApiKey, KeyCheck } from '../auth/key-store.js';
import { ERROR_CODES } from '../shared/errors.js';
import type { ApiDeps } from './api-deps.js';
import { familyOf, httpError, ROUTE_FAMILIES } from './errors.js';

export interface Caller {
  accountId: string;
  key: ApiKey;
}

declare module 'fastify' {
  interface FastifyRequest {
    caller?: Caller;
  }
}

export function bearer(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** The spec's 401 texts differ by route family; the gender endpoint tells three cases apart. */
function unauthorized(request: FastifyRequest, check: Exclude<KeyCheck, { ok: true }>) {
  const family = familyOf(request.url);
  let message = 'Unauthorized';
  if (family === ROUTE_FAMILIES.agent) message = 'bad key';
  if (family === ROUTE_FAMILIES.gender) {
    message = check.reason === 'missing' ? 'API key required' : check.reason === 'suspended' ? 'Unauthorized' : 'bad key';
  }
  return httpError(401, ERROR_CODES.unauthorized, message);
}

/**
 * Resolves the API key on every request (so a disabled key is refused on its very next call), then
 * spends one request of the account's rolling-minute budget and says so in the headers.
 */
export function keyAuth(deps: ApiDeps) {
  return async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const check = await deps.keys.check(bearer(request));
    if (!check.ok) throw unauthorized(request, check);
    request.caller = { accountId: check.key.accountId, key: check.key };
    await applyRateLimit(deps, reply, check.key.accountId);
  };
}

export async function applyRateLimit(deps: ApiDeps, reply: FastifyReply, accountId: string): Promise<void> {
  const account = await deps.engine.billing.requireAccount(accountId);
  const decision = await deps.rateLimiter.take(accountId, account.rateLimit ?? deps.settings.rateLimitPerMinute, deps.engine.clock.now());
  reply.header('X-RateLimit-Limit', decision.limit);
  reply.header('X-RateLimit-Remaining', decision.remaining);
  reply.header('X-RateLimit-Reset', decision.resetAt);
  if (!decision.allowed) {
    reply.header('Retry-After', decision.retryAfter);
    throw httpError(429, ERROR_CODES.rateLimited, 'Rate limit exceeded', { retryAfter: decision.retryAfter });
  }
}

/** Roles per spec 5.6: readonly keys may read but not change keys, webhooks or jobs. */
export function requireWritable(request: FastifyRequest): Caller {
  const caller = request.caller!;
  if (caller.key.role === 'readonly') throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions');
  return caller;
}

/** Spec 5.6 and docs/security.md: what touches a webhook's delivery or shows who did what is for admin keys. */
export function requireAdmin(request: FastifyRequest): Caller {
  const caller = request.caller!;
  if (caller.key.role !== 'admin') throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions: this needs the admin role');
  return caller;
}
