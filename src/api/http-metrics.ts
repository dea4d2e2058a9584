import type { FastifyInstance } from 'fastify';
import type { Metrics } from '../shared/metrics.js';

/** Requests that matched no route: one series for all of them, so that scanners cannot grow the label set. */
export const UNMATCHED_ROUTE = 'unmatched';

/**
 * Counts and times every answer by route template (`/api/jobs/:id`, never the URL with its ids),
 * method and status class: what an operator alerts on (a rise of 5xx, a slow route) with a closed
 * set of series.
 */
export function countHttpRequests(app: FastifyInstance, metrics: Pick<Metrics, 'httpRequests' | 'httpDuration'>): void {
  app.addHook('onResponse', async (request, reply) => {
    const labels = {
      route: request.routeOptions.url ?? UNMATCHED_ROUTE,
      method: request.method,
      status_class: `${Math.floor(reply.statusCode / 100)}xx`,
    };
    metrics.httpRequests.inc(labels);
    metrics.httpDuration.observe(labels, reply.elapsedTime / 1000);
  });
}
