import type { FastifyInstance } from 'fastify';
import type { ApiKey, Role } from '../../auth/key-store.js';
import { ROLES } from '../../auth/key-store.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function view(key: ApiKey) {
  return {
    id: key.id,
    name: key.name,
    key_prefix: key.keyPrefix,
    role: key.role,
    is_active: key.isActive,
    revoked: key.revokedAt !== null,
    created_at: new Date(key.createdAt).toISOString(),
  };
}

/** Spec 4.1: the account's keys, managed with an API key. Secrets are never listed. */
export async function keyRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('preHandler', keyAuth(deps));

  const ownKey = (accountId: string, id: string | undefined): ApiKey => {
    const key = id ? deps.keys.get(id) : undefined;
    if (!key || key.accountId !== accountId) throw httpError(404, ERROR_CODES.keyNotFound, 'API key not found');
    return key;
  };

  app.post<{ Body: { name?: string; role?: Role } }>(
    '/api/account/keys',
    {
      schema: {
        tags: ['keys'],
        body: { type: 'object', properties: { name: { type: 'string', maxLength: 200 }, role: { type: 'string', enum: Object.values(ROLES) } } },
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const name = request.body?.name?.trim();
      if (!name) throw httpError(400, ERROR_CODES.invalidRequest, 'Name is required');
      const role = request.body?.role ?? caller.key.role;
      if (role === 'admin' && caller.key.role !== 'admin') throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions');
      const { key, secret } = deps.keys.create({ accountId: caller.accountId, name, role, now: deps.engine.clock.now() });
      return { id: key.id, name: key.name, key: secret, key_prefix: key.keyPrefix, is_active: key.isActive, role: key.role };
    },
  );

  app.get('/api/account/keys', { schema: { tags: ['keys'] } }, async (request) => {
    const keys = deps.keys.list(request.caller!.accountId).map(view);
    return { keys, total: keys.length };
  });

  app.patch<{ Querystring: { id?: string; action?: string } }>(
    '/api/account/keys',
    { schema: { tags: ['keys'], querystring: { type: 'object', properties: { id: { type: 'string' }, action: { type: 'string' } } } } },
    async (request) => {
      const { id, action } = request.query;
      if (!id || !action || (action !== 'disable' && action !== 'enable')) {
        throw httpError(400, ERROR_CODES.invalidRequest, 'id and action are required');
      }
      const caller = requireWritable(request);
      const key = ownKey(caller.accountId, id);
      if (!deps.keys.setActive(key.id, action === 'enable')) throw httpError(409, ERROR_CODES.invalidState, 'API key is revoked');
      return { message: action === 'disable' ? 'API key disabled' : 'API key enabled' };
    },
  );

  app.get<{ Querystring: { id?: string } }>(
    '/api/account/keys/reveal',
    { schema: { tags: ['keys'], querystring: { type: 'object', properties: { id: { type: 'string' } } } } },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      const { id } = request.query;
      if (!id || !UUID.test(id)) throw httpError(400, ERROR_CODES.invalidRequest, 'id is required and must be a UUID');
      const caller = requireWritable(request);
      const key = ownKey(caller.accountId, id);
      return { key: deps.keys.reveal(key.id, deps.engine.clock.now()) };
    },
  );
}
