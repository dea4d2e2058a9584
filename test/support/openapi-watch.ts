import type { FastifyInstance } from 'fastify';
import { OpenApiResponseCheck } from './openapi-response-check.js';

/**
 * Every answer an API suite receives through the harness is checked against the document the app
 * serves, on whichever store the suite runs; closeHarnesses fails the suite with what it found.
 * That is what keeps the document true: a new status, field or route shows up here by name.
 */
const violations = new Set<string>();

export function watchResponses(app: FastifyInstance): void {
  let check: OpenApiResponseCheck | undefined;
  app.addHook('onSend', async (request, reply, payload) => {
    const route = request.routeOptions.url;
    // No route (404 of an unknown path) or a hidden one (dashboard files, /metrics, 405s): not API operations.
    if (route === undefined || (request.routeOptions.schema as { hide?: boolean } | undefined)?.hide) return payload;
    check ??= new OpenApiResponseCheck(app.swagger());
    const body = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : payload == null ? '' : undefined;
    const contentType = reply.getHeader('content-type');
    for (const problem of check.check({ method: request.method, route, status: reply.statusCode, contentType: contentType === undefined ? undefined : String(contentType), body })) {
      violations.add(problem);
    }
    return payload;
  });
}

/** Throws, naming every disagreement seen since the last call; clears them. */
export function assertResponsesDocumented(): void {
  if (violations.size === 0) return;
  const found = [...violations];
  violations.clear();
  throw new Error(`The API answered what its OpenAPI document does not describe (src/api/openapi/, or the route's schema):\n  ${found.join('\n  ')}`);
}
