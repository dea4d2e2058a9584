import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api-deps.js';

/** /healthz: the process answers. /readyz: the database and the object store answer too. */
export async function healthRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.get('/healthz', { schema: { tags: ['operations'], security: [] } }, async () => ({ status: 'ok' }));
  app.get('/readyz', { schema: { tags: ['operations'], security: [] } }, async (_request, reply) => {
    try {
      await deps.ready();
      return { status: 'ready' };
    } catch {
      return reply.code(503).send({ status: 'not_ready' });
    }
  });
}
