import type { FastifyInstance, FastifyReply } from 'fastify';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { LoginThrottle, type LoginAttempt } from '../../auth/login-throttle.js';
import { verifyPassword } from '../../auth/passwords.js';
import { ERROR_CODES, isAppError } from '../../shared/errors.js';
import type { ApiDeps } from '../api-deps.js';
import { applyRateLimit, bearer } from '../authenticate.js';
import { httpError } from '../errors.js';
import { requestAudit } from './audit-routes.js';
import { keyName } from './key-routes.js';

const loginBody = {
  type: 'object',
  required: ['email', 'password'],
  properties: { email: { type: 'string', maxLength: 320 }, password: { type: 'string', maxLength: 1024 } },
} as const;

/** Documents the refusals of the login throttle; every body passes through whole. */
const loginResponses = {
  200: { description: 'A session token and the user', type: 'object', additionalProperties: true },
  401: { description: 'Wrong email or password', type: 'object', additionalProperties: true },
  429: {
    description: 'too_many_attempts: too many failed logins for this email or from this address; Retry-After gives the seconds to wait',
    type: 'object',
    additionalProperties: true,
  },
  503: { description: 'server_busy: too many logins waiting for a password hash; Retry-After: 1', type: 'object', additionalProperties: true },
} as const;

const logoutResponses = {
  200: {
    description: 'The session token given as Bearer no longer works; the same answer when it had already ended or never existed',
    type: 'object',
    properties: { message: { type: 'string' } },
  },
  401: { description: 'No Bearer token', type: 'object', additionalProperties: true },
} as const;

/** Spec 4.1: log in with email and password, then make a key with the session token. */
export async function authRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  const throttle = new LoginThrottle(deps.engine.store.limits);
  const audit = requestAudit(deps);
  app.post<{ Body: { email: string; password: string } }>('/api/auth/login', { schema: { body: loginBody, response: loginResponses, tags: ['keys'], security: [] } }, async (request, reply) => {
    const { email, password } = request.body;
    // Decided before any hash, so that a refused attempt costs the thread pool nothing.
    const verdict = await throttle.begin(email, request.ip, deps.engine.clock.now());
    if (!verdict.allowed) {
      reply.header('Retry-After', verdict.retryAfter);
      throw httpError(429, ERROR_CODES.tooManyAttempts, 'Too many login attempts; try again later', { retryAfter: verdict.retryAfter });
    }
    const account = await deps.engine.billing.credentials(email.trim());
    // Verify against a real hash even for unknown emails, so timing does not reveal which exist.
    const ok = await verifyOrWithdraw(password, account?.passwordHash ?? DUMMY_HASH, verdict.attempt, throttle, deps, reply);
    // An unknown email has no account to log it in: only attempts on a known email are audited.
    // That write (about a millisecond) is the one timing difference left between the two, against
    // tens of milliseconds of hash jitter, with the email throttle allowing a handful of samples.
    if (!account) throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    const login = { accountId: account.id, actor: { type: 'login' } } as const;
    if (!account.passwordHash || !ok || account.status !== 'active') {
      await audit(request, AUDIT_ACTIONS.loginFailed, null, login);
      throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    }
    await throttle.succeeded(verdict.attempt, deps.engine.clock.now());
    // Undefined when a suspension came between the password check and the session.
    const session = await deps.sessions.create(account.id, deps.engine.clock.now());
    if (!session) {
      await audit(request, AUDIT_ACTIONS.loginFailed, null, login);
      throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    }
    await audit(request, AUDIT_ACTIONS.loginSucceeded, null, login);
    return {
      token: session.token,
      expires_at: new Date(session.expiresAt).toISOString(),
      user: { id: account.id, email: email.trim().toLowerCase() },
    };
  });

  app.post<{ Body: unknown }>('/api/keys', { schema: { tags: ['keys'] } }, async (request, reply) => {
    const now = deps.engine.clock.now();
    // accountFor refuses an expired session and an account that is not active.
    const accountId = await deps.sessions.accountFor(bearer(request), now);
    if (!accountId) throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    await applyRateLimit(deps, reply, accountId);
    const name = keyName(request.body);
    const { key, secret } = await deps.keys.create({ accountId, name, role: 'admin', now });
    await audit(request, AUDIT_ACTIONS.keyCreated, key.id, { accountId, actor: { type: 'session' } });
    return { id: key.id, key: secret, name: key.name, created_at: new Date(key.createdAt).toISOString() };
  });

  app.post('/api/auth/logout', { schema: { response: logoutResponses, tags: ['keys'], security: [{ bearer: [] }] } }, async (request) => {
    const token = bearer(request);
    if (!token) throw httpError(401, ERROR_CODES.unauthorized, 'Unauthorized');
    // The same answer for a live, an ended and an unknown token: logging out twice is not an
    // error, and the answer tells nobody whether a token was ever good.
    const accountId = await deps.sessions.end(token);
    if (accountId) await audit(request, AUDIT_ACTIONS.sessionEnded, null, { accountId, actor: { type: 'session' } });
    return { message: 'Logged out' };
  });
}

/**
 * 503 rather than 429 when too many logins wait for a hash: the queue fills from every client
 * together, so the one turned away is not the one asking too often. The attempt is withdrawn, as
 * no password was tried.
 */
async function verifyOrWithdraw(password: string, hash: string, attempt: LoginAttempt, throttle: LoginThrottle, deps: ApiDeps, reply: FastifyReply): Promise<boolean> {
  try {
    return await verifyPassword(password, hash);
  } catch (e: unknown) {
    if (!isAppError(e, ERROR_CODES.serverBusy)) throw e;
    await throttle.withdrawn(attempt, deps.engine.clock.now());
    reply.header('Retry-After', 1);
    throw httpError(503, ERROR_CODES.serverBusy, e.message);
  }
}

/** scrypt hash of a random password nobody knows; only its cost matters. */
const DUMMY_HASH = 'scrypt$32768$8$1$3q2-7w$xY7nYx9vJ0aLQ1n3bQm1mHq2W6lRz3m3o5yZ7rQ8b1E';
