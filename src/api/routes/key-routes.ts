import type { FastifyInstance } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import type { ApiKey, Role } from '../../auth/key-store.js';
import { outranks, ROLES, SEAL_SWEEP_MS } from '../../auth/key-store.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { DEFAULT_QUOTAS } from '../../jobs/account-quotas.js';
import { apiQuotas } from '../quotas.js';
import { requestAudit } from './audit-routes.js';
import { KEY_ID, keyExpiry, rollRequest } from './key-rotation-fields.js';


function view(key: ApiKey) {
  return {
    id: key.id,
    name: key.name,
    key_prefix: key.keyPrefix,
    role: key.role,
    is_active: key.isActive,
    revoked: key.revokedAt !== null,
    created_at: new Date(key.createdAt).toISOString(),
    expires_at: key.expiresAt === null ? null : new Date(key.expiresAt).toISOString(),
    replaced_by: key.replacedBy,
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

/** API keys an account may hold that are not revoked (disabled ones count) by default: bounds what a leaked key can mint. SLUICE_QUOTA_API_KEYS sets it. */
export const MAX_KEYS_PER_ACCOUNT = DEFAULT_QUOTAS.apiKeys;

/** Spec 4.1: the account's keys, managed with an API key. Secrets are never listed. */
export async function keyRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  // onRequest: the key is checked (and the request counted) before the body is even read.
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);
  const quotas = apiQuotas(deps);

  // Sealed copies must not outlive their reveal window in the database (a backup of the data dir
  // would give them up with the seal key): swept at start and every SEAL_SWEEP_MS while serving,
  // not only when someone asks to reveal. One UPDATE a minute per API process.
  const sweepSeals = () => deps.keys.forgetExpiredSeals(deps.engine.clock.now());
  await sweepSeals();
  const sweeper = setInterval(() => {
    sweepSeals().catch((error: unknown) => app.log.warn({ err: error }, 'could not drop expired sealed API keys'));
  }, SEAL_SWEEP_MS);
  sweeper.unref();
  app.addHook('onClose', async () => clearInterval(sweeper));

  const ownKey = async (accountId: string, id: string | undefined): Promise<ApiKey> => {
    const key = id ? await deps.keys.get(id) : undefined;
    if (!key || key.accountId !== accountId) throw httpError(404, ERROR_CODES.keyNotFound, 'API key not found');
    return key;
  };

  app.post<{ Body: unknown }>(
    '/api/account/keys',
    {
      schema: {
        tags: ['keys'],
        description:
          'Body: `name` (required), optional `role` (admin, tech, readonly; admin keys only make admin keys) and `expires_at` (ISO 8601 with a zone, in the future, within 5 years: the key is refused from then on).',
      },
    },
    async (request) => {
      const caller = requireWritable(request);
      const name = keyName(request.body);
      const rawRole = (request.body as { role?: unknown } | null | undefined)?.role;
      if (rawRole !== undefined && !Object.values(ROLES).includes(rawRole as Role)) {
        throw httpError(422, ERROR_CODES.invalidRequest, `Invalid request: role must be one of ${Object.values(ROLES).join(', ')}`);
      }
      const role = (rawRole as Role | undefined) ?? caller.key.role;
      const now = deps.engine.clock.now();
      const expiresAt = keyExpiry(request.body, now);
      if (role === 'admin' && caller.key.role !== 'admin') throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions');
      await underKeyQuota(caller.accountId);
      const { key, secret } = await deps.keys.create({ accountId: caller.accountId, name, role, now, expiresAt });
      await audit(request, AUDIT_ACTIONS.keyCreated, key.id);
      return { id: key.id, name: key.name, key: secret, key_prefix: key.keyPrefix, is_active: key.isActive, role: key.role, expires_at: view(key).expires_at };
    },
  );

  // The api_keys quota (SLUICE_QUOTA_API_KEYS), counted from the store like the others but
  // answered with its own older code. Checked before the insert: two creates racing for the last
  // place can both pass, by one key.
  const underKeyQuota = async (accountId: string): Promise<void> => {
    const limit = quotas.limits.apiKeys;
    const live = (await quotas.usage(accountId)).apiKeys;
    if (live >= limit) {
      throw httpError(409, ERROR_CODES.tooManyKeys, `An account may have at most ${limit} API keys that are not revoked; revoke one first`, { limit, quota: 'api_keys', used: live });
    }
  };

  app.post<{ Body: unknown }>(
    '/api/account/keys/roll',
    {
      schema: {
        tags: ['keys'],
        description:
          'Issue 27, item 7. Body: `id` of the key to roll (required) and `grace_seconds` (0 to 604800, default 86400). Makes a new key with a new secret, the same name and role (and end, if it had one), shown this once; the old key keeps working for `grace_seconds`, then is refused. Roles as for disabling: a non-readonly key, never on a key of a higher role (403). A key is rolled once: a revoked, ended or already rolled key is 409 `invalid_state` (roll its replacement).',
      },
    },
    async (request) => {
      const { id, graceSeconds } = rollRequest(request.body);
      const caller = requireWritable(request);
      const old = await ownKey(caller.accountId, id);
      if (outranks(old.role, caller.key.role)) throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions');
      await underKeyQuota(caller.accountId);
      const now = deps.engine.clock.now();
      const { key, secret } = await deps.keys.roll(old, graceSeconds * 1000, now);
      await audit(request, AUDIT_ACTIONS.keyRolled, old.id);
      await audit(request, AUDIT_ACTIONS.keyCreated, key.id);
      const ended = (await deps.keys.get(old.id))!;
      return { ...view(key), key: secret, rolled: view(ended) };
    },
  );

  app.get('/api/account/keys', { schema: { tags: ['keys'] } }, async (request) => {
    await sweepSeals();
    const keys = (await deps.keys.list(request.caller!.accountId)).map(view);
    return { keys, total: keys.length };
  });

  app.patch<{ Querystring: { id?: string; action?: string } }>(
    '/api/account/keys',
    {
      schema: {
        tags: ['keys'],
        description: 'Needs a non-readonly key, and never acts on a key of a higher role than the caller (readonly < tech < admin): 403 `Insufficient permissions`.',
        querystring: { type: 'object', properties: { id: { type: 'string' }, action: { type: 'string' } } },
      },
    },
    async (request) => {
      const { id, action } = request.query;
      if (!id || !action || (action !== 'disable' && action !== 'enable')) {
        throw httpError(400, ERROR_CODES.invalidRequest, 'id and action are required');
      }
      const caller = requireWritable(request);
      const key = await ownKey(caller.accountId, id);
      if (outranks(key.role, caller.key.role)) throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions');
      // Disabling is how a leak is contained, so a tech key may do it; enabling undoes that, so only
      // an admin may: a leaked tech key re-enabled the one an admin had disabled (issue 27, finding 4).
      if (action === 'enable' && caller.key.role !== ROLES.admin) throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions: only an admin key enables keys');
      if (!(await deps.keys.setActive(key.id, action === 'enable'))) throw httpError(409, ERROR_CODES.invalidState, 'API key is revoked');
      await audit(request, action === 'enable' ? AUDIT_ACTIONS.keyEnabled : AUDIT_ACTIONS.keyDisabled, key.id);
      return { message: action === 'disable' ? 'API key disabled' : 'API key enabled' };
    },
  );

  app.get<{ Querystring: { id?: string } }>(
    '/api/account/keys/reveal',
    {
      schema: {
        tags: ['keys'],
        description: 'Only an admin key, or the key itself (its own secret); others get 403 `Insufficient permissions`. 410 once the reveal window is over.',
        querystring: { type: 'object', properties: { id: { type: 'string' } } },
      },
    },
    async (request, reply) => {
      reply.header('Cache-Control', 'no-store');
      const { id } = request.query;
      if (!id || !KEY_ID.test(id)) throw httpError(400, ERROR_CODES.invalidRequest, 'id is required and must be a UUID');
      const caller = requireWritable(request);
      const key = await ownKey(caller.accountId, id);
      // A tech key that could read a fresh admin key's secret would be an admin key.
      if (caller.key.role !== ROLES.admin && caller.key.id !== key.id) throw httpError(403, ERROR_CODES.forbidden, 'Insufficient permissions');
      const secret = await deps.keys.reveal(key.id, deps.engine.clock.now());
      await audit(request, AUDIT_ACTIONS.keyRevealed, key.id);
      return { key: secret };
    },
  );
}
