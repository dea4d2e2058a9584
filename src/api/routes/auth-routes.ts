import type { FastifyInstance } from 'fastify';
import { verifyPassword } from '../../auth/passwords.js';
import { ERROR_CODES } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { applyRateLimit, bearer } from '../authenticate.js';
import { httpError } from '../errors.js';
import { keyName } from './key-routes.js';

const loginBody = {
  type: 'object',
  required: ['email', 'password'],
  properties: { email: { type: 'string', maxLength: 320 }, password: { type: 'string', maxLength: 1024 } },
} as const;


/** Spec 4.1: log in with email and password, then make a key with the session token. */
export async function authRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.post<{ Body: { email: string; password: string } }>('/api/auth/login', { schema: { body: loginBody, tags: ['keys'], security: [] } }, async (request) => {
    const { email, password } = request.body;
    const account = await deps.engine.billing.credentials(email.trim());
    // Verify against a real hash even for unknown emails, so timing does not reveal which exist.
    const ok = await verifyPassword(password, account?.passwordHash ?? DUMMY_HASH);
    if (!account || !account.passwordHash || !ok || account.status !== 'active') {
      throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    }
    const session = await deps.sessions.create(account.id, deps.engine.clock.now());
    return {
      token: session.token,
      expires_at: new Date(session.expiresAt).toISOString(),
      user: { id: account.id, email: email.trim().toLowerCase() },
    };
  });

  app.post<{ Body: unknown }>('/api/keys', { schema: { tags: ['keys'] } }, async (request, reply) => {
    const now = deps.engine.clock.now();
    const accountId = await deps.sessions.accountFor(bearer(request), now);
    if (!accountId || (await deps.engine.billing.account(accountId))?.status !== 'active') {
      throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    }
    await applyRateLimit(deps, reply, accountId);
    const name = keyName(request.body);
    const { key, secret } = await deps.keys.create({ accountId, name, role: 'admin', now });
    return { id: key.id, key: secret, name: key.name, created_at: new Date(key.createdAt).toISOString() };
  });
}

/** scrypt hash of a random password nobody knows; only its cost matters. */
const DUMMY_HASH = 'scrypt$32768$8$1$3q2-7w$xY7nYx9vJ0aLQ1n3bQm1mHq2W6lRz3m3o5yZ7rQ8b1E';
