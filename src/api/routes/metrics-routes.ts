import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Registry } from 'prom-client';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { httpError, sendError } from '../errors.js';

/**
 * `GET /metrics` for Prometheus. Not an API customer's route, so it is left out of the OpenAPI
 * document and needs no API key: `serve` binds loopback by default, and SLUICE_METRICS_TOKEN
 * guards it where the port is reachable from further away.
 */
export async function metricsRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const settings = deps.settings.metrics ?? { enabled: true, token: undefined };
  if (!settings.enabled) return;
  const registry = deps.engine.metrics.registry;
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    if (!authorised(request, settings.token)) {
      reply.header('WWW-Authenticate', 'Bearer');
      return sendError(request, reply, httpError(401, ERROR_CODES.unauthorized, 'A bearer token is required for /metrics'));
    }
    return scrape(registry, reply);
  });
}

export async function scrape(registry: Registry, reply: FastifyReply): Promise<string> {
  reply.header('Content-Type', registry.contentType);
  return registry.metrics();
}

/** Constant-time, so the token cannot be guessed a byte at a time from response times. */
export function authorised(request: Pick<FastifyRequest, 'headers'>, token: string | undefined): boolean {
  if (token === undefined) return true;
  const given = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}
