import type { KeyStore } from '../auth/key-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { RateLimiter } from '../auth/rate-limiter.js';
import type { SessionStore } from '../auth/session-store.js';
import type { EngineDeps } from '../jobs/engine-deps.js';
import type { JobService } from '../jobs/job-service.js';
import type { MonitorService } from '../monitors/monitor-service.js';
import type { Webhooks } from '../webhooks/webhooks.js';

export interface ApiSettings {
  readonly maxUploadBytes: number;
  readonly rateLimitPerMinute: number;
  readonly presignExpiresSeconds: number;
  readonly maxRows: number;
  /** Reverse proxies whose X-Forwarded-For names the client; undefined: the TCP peer is the client. */
  readonly trustProxy?: readonly string[] | undefined;
  /** `GET /metrics`: false, not served; `token`, a bearer token it requires. Unset: served to anyone. */
  readonly metrics?: { readonly enabled: boolean; readonly token: string | undefined };
  /** Workflow runs queued or running per account; unset: 100. */
  readonly workflowRunsInFlight?: number;
}

/** What the HTTP layer needs; buildApp takes it whole and never reads configuration itself. */
export interface ApiDeps {
  readonly engine: EngineDeps;
  readonly jobService: JobService;
  readonly keys: KeyStore;
  readonly sessions: SessionStore;
  readonly rateLimiter: RateLimiter;
  readonly idempotency: IdempotencyStore;
  readonly webhooks: Webhooks;
  readonly monitors: MonitorService;
  readonly settings: ApiSettings;
  /** Database and object store reachable: what /readyz reports. */
  readonly ready: () => Promise<void>;
}
