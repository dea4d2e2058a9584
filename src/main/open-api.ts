import type { FastifyInstance } from 'fastify';
import type { ApiDeps } from '../api/api-deps.js';
import { buildApp } from '../api/build-app.js';
import { IdempotencyStore } from '../api/idempotency-store.js';
import { RateLimiter } from '../auth/rate-limiter.js';
import { monitorServiceOf } from '../monitors/monitor-service.js';
import type { Engine } from './open-engine.js';
import { openEnricher } from './open-enrich.js';
import { AccountQuotas } from '../jobs/account-quotas.js';

/** The API's dependencies over an open engine: the one place that wires the HTTP layer. */
export function apiDeps(engine: Engine): ApiDeps {
  const { config, deps } = engine;
  return {
    engine: deps,
    jobService: engine.jobService,
    keys: engine.auth.keys,
    sessions: engine.auth.sessions,
    rateLimiter: new RateLimiter(deps.store.limits),
    idempotency: new IdempotencyStore(deps.store.idempotency),
    webhooks: engine.webhooks,
    monitors: monitorServiceOf(deps, new AccountQuotas(deps.store.quotaUsage, config.api.quotas)),
    ...(engine.secretScans ? { secretScans: engine.secretScans } : {}),
    ...(engine.repoScans ? { repoScans: engine.repoScans } : {}),
    settings: {
      maxUploadBytes: config.api.maxUploadBytes,
      rateLimitPerMinute: config.api.rateLimitPerMinute,
      presignExpiresSeconds: config.presignExpiresSeconds,
      maxRows: config.jobs.maxRows,
      trustProxy: config.api.trustProxy,
      metrics: { enabled: config.metrics.enabled, token: config.metrics.token },
      validityDeadlineMs: config.validity.deadlineMs,
      heavyReadsPerAccount: config.api.heavyReadsPerAccount,
      workflowRunsInFlight: config.workflows.runsInFlight,
      quotas: config.api.quotas,
    },
    enrich: openEnricher(engine),
    ready: async () => {
      await deps.store.ping();
      await deps.objects.ping();
    },
  };
}

export async function openApi(engine: Engine): Promise<FastifyInstance> {
  return buildApp(apiDeps(engine), engine.deps.log);
}
