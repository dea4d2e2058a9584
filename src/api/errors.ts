import type { FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES, type ErrorCode } from '../shared/errors.js';

/**
 * The spec has three error body shapes; which one a route speaks depends on its family. Errors
 * are thrown as AppError anywhere below and shaped here, once.
 */
export const ROUTE_FAMILIES = { standard: 'standard', agent: 'agent', gender: 'gender', webhook: 'webhook' } as const;
export type RouteFamily = (typeof ROUTE_FAMILIES)[keyof typeof ROUTE_FAMILIES];

export function familyOf(url: string): RouteFamily {
  const path = url.split('?')[0] ?? url;
  if (path.startsWith('/api/agent/')) return ROUTE_FAMILIES.agent;
  if (path === '/api/email/gender' || path === '/api/lookup/email/gender') return ROUTE_FAMILIES.gender;
  if (path === '/api/webhooks' || path.startsWith('/api/webhooks/')) return ROUTE_FAMILIES.webhook;
  return ROUTE_FAMILIES.standard;
}

export function httpError(statusCode: number, code: ErrorCode, message: string, details?: Record<string, unknown>): AppError {
  return new AppError(code, message, { statusCode, ...(details ? { details } : {}) });
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  const status = error.statusCode ?? 500;
  const family = familyOf(request.url);
  if (family === ROUTE_FAMILIES.agent && status === 401) {
    return reply.code(401).send({ c: 401, m: error.message });
  }
  if (family === ROUTE_FAMILIES.webhook) {
    // Spec 7: the webhook envelope, with `bad_request` for every 400.
    const code = status === 400 ? ERROR_CODES.badRequest : error.code;
    return reply.code(status).send({ success: false, result: { code }, message: error.message });
  }
  const body: Record<string, unknown> = { error: error.message };
  if (error.code !== ERROR_CODES.internal && status !== 401) body.code = error.code;
  return reply.code(status).send(body);
}
