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

/**
 * A key's name, checked by hand rather than by schema: the spec answers a missing name with
 * 400 `Name is required` (also when there is no body at all), and a name of the wrong type is 422.
 */
export function keyName(body: unknown): string {
  if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
    throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: body must be a JSON object');
  }
  const name = (body as { name?: unknown } | null | undefined)?.name;
  if (name === undefined || name === null || (typeof name === 'string' && name.trim() === '')) {
    throw httpError(400, ERROR_CODES.invalidRequest, 'Name is required');
  }
  if (typeof name !== 'string') throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: name must be a string');
  if (name.length > 200) throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: name is longer than 200 characters');
  return name.trim();
}

/** Spec 4.1: the account's keys, managed with an API key. Secrets are never listed. */
export async function keyRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  // onRequest: the key is checked (and the request counted) before the body is even read.
  app.addHook('onRequest', keyAuth(deps));

  const ownKey = async (accountId: string, id: string | undefined): Promise<ApiKey> => {
    const key = id ? await deps.keys.get(id) : undefined;
    if (!key || key.accountId !== accountId) throw httpError(404, ERROR_CODES.keyNotFound, 'API key not found');
    return key;
  };

  app.post<{ Body: unknown }>(
    '/api/account/keys',
    { schema: { tags: ['keys'], description: 'Body: `name` (required), optional `role` (admin, tech, readonly; admin keys only make admin keys).' } },
    async (request) => {
      const caller = requireWritable(request);
      const name = keyName(request.body);
      const rawRole = (request.body as { role?: unknown } | null | undefined)?.role;
      if (rawRole !== undefined && !Object.values(ROLES).includes(rawRole as Role)) {
        throw httpError(422, ERROR_CODES.invalidRequest, `Invalid request: role must be one of ${Object.values(ROLES).join(', ')}`);
      }
      const role = (rawRole as Role | undefined) ?? caller.key.role;
      if (role === 'admin' && caller.key.role !== 'admin') throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions');
      const { key, secret } = await deps.keys.create({ accountId: caller.accountId, name, role, now: deps.engine.clock.now() });
      return { id: key.id, name: key.name, key: secret, key_prefix: key.keyPrefix, is_active: key.isActive, role: key.role };
    },
  );

  app.get('/api/account/keys', { schema: { tags: ['keys'] } }, async (request) => {
    const keys = (await deps.keys.list(request.caller!.accountId)).map(view);
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
      const key = await ownKey(caller.accountId, id);
      if (!(await deps.keys.setActive(key.id, action === 'enable'))) throw httpError(409, ERROR_CODES.invalidState, 'API key is revoked');
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
      const key = await ownKey(caller.accountId, id);
      return { key: await deps.keys.reveal(key.id, deps.engine.clock.now()) };
    },
  );
}
