import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api/api-deps.js';
import { buildApp } from '../api/build-app.js';
import { IdempotencyStore } from '../api/idempotency-store.js';
import { KeyStore } from '../auth/key-store.js';
import { RateLimiter } from '../auth/rate-limiter.js';
import { SessionStore } from '../auth/session-store.js';
import { dataDirSecret } from './data-dir-secret.js';
import type { Engine } from './open-engine.js';

/** The API's dependencies over an open engine: the one place that wires the HTTP layer. */
export function apiDeps(engine: Engine): ApiDeps {
  const { config, deps } = engine;
  // Seals newly created API keys for the reveal window; one per data dir, never in the database.
  const sealKey = Buffer.from(dataDirSecret(config.dataDir, 'seal.key', () => randomBytes(32).toString('base64')), 'base64');
  return {
    engine: deps,
    jobService: engine.jobService,
    keys: new KeyStore(deps.db, sealKey, config.api.keyRevealSeconds * 1000),
    sessions: new SessionStore(deps.db, config.api.sessionTtlSeconds * 1000),
    rateLimiter: new RateLimiter(),
    idempotency: new IdempotencyStore(deps.db),
    settings: {
      maxUploadBytes: config.api.maxUploadBytes,
      rateLimitPerMinute: config.api.rateLimitPerMinute,
      presignExpiresSeconds: config.presignExpiresSeconds,
      maxRows: config.jobs.maxRows,
    },
    ready: async () => {
      deps.db.prepare('SELECT 1').get();
      await deps.objects.ping();
    },
  };
}

export async function openApi(engine: Engine): Promise<FastifyInstance> {
  return buildApp(apiDeps(engine), engine.deps.log);
}
