import type { FastifyInstance } from 'fastify';
import { ERROR_CODES } from '../shared/errors.js';
import { httpError } from './errors.js';

/**
 * The largest offset or limit a list route takes: any larger has no row to show, and above 2^63
 * it no longer fits the databases' 64-bit integers, where it answered 500 on five list routes
 * (issue 27, finding 6). 2^53 - 1 also keeps it exact as a JavaScript number.
 */
export const MAX_PAGE_NUMBER = Number.MAX_SAFE_INTEGER;

/** How deep a JSON body is searched for NUL characters; the bodies the API takes are two or three levels deep. */
const MAX_DEPTH = 32;

/**
 * Refuses, with 400 `invalid_request`, what no store can take and what no valid request holds,
 * before any route's own validation: an offset or limit beyond MAX_PAGE_NUMBER, and a NUL
 * character in any string of the query, the path or a JSON body (PostgreSQL text cannot hold
 * one, and answered 500 on ten routes).
 */
export function guardInputs(app: FastifyInstance): void {
  app.addHook('preValidation', async (request) => {
    const query = (request.query ?? {}) as Record<string, unknown>;
    // `before`, the audit and usage logs' id cursor, too: 10^20 answered 500 on PostgreSQL's bigint.
    for (const name of ['offset', 'limit', 'before']) {
      const value = query[name];
      if (value === undefined) continue;
      const n = Number(value);
      if (Number.isFinite(n) && Math.abs(n) > MAX_PAGE_NUMBER) {
        throw httpError(400, ERROR_CODES.invalidRequest, `Invalid request: ${name} must be no more than ${MAX_PAGE_NUMBER}`, { field: name });
      }
    }
    for (const [where, value] of [['query', request.query], ['path', request.params], ['body', request.body]] as const) {
      if (holdsNul(value, 0)) throw httpError(400, ERROR_CODES.invalidRequest, `Invalid request: the ${where} holds a NUL character`, { field: where });
    }
  });
}

function holdsNul(value: unknown, depth: number): boolean {
  if (typeof value === 'string') return value.includes('\u0000');
  if (value === null || typeof value !== 'object' || depth > MAX_DEPTH) return false;
  // Multipart bodies and streams are not plain data: their fields are checked where they are read.
  if (Array.isArray(value)) return value.some((v) => holdsNul(v, depth + 1));
  if (Buffer.isBuffer(value) || typeof (value as { pipe?: unknown }).pipe === 'function') return false;
  return Object.entries(value).some(([k, v]) => k.includes('\u0000') || holdsNul(v, depth + 1));
}
