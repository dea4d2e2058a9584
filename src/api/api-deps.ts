import type { KeyStore } from '../auth/key-store.js';
import type { IdempotencyStore } from './idempotency-store.js';
import type { RateLimiter } from '../auth/rate-limiter.js';
import type { SessionStore } from '../auth/session-store.js';
import type { EngineDeps } from '../jobs/engine-deps.js';
import type { EmailEnricherDeps } from '../lookups/enrich/email-enricher.js';
import type { JobService } from '../jobs/job-service.js';
import type { ExposedKeysDeps } from '../jobs/exposed-keys-scan.js';
import type { RepoScanDeps } from '../jobs/repo-scan-job.js';
import type { MonitorService } from '../monitors/monitor-service.js';
import type { QuotaLimits } from '../jobs/account-quotas.js';
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
  /** How long `POST /api/lookup/email/validity` works on an address (SLUICE_VALIDITY_DEADLINE_MS); unset: 15 s. */
  readonly validityDeadlineMs?: number;
  /** Heavy reads (src/api/heavy-reads.ts) one account may have in flight; unset: the default. */
  readonly heavyReadsPerAccount?: number;
  /** Workflow runs queued or running per account; unset: 100. */
  readonly workflowRunsInFlight?: number;
  /** Per-account quotas (issue 27); unset: DEFAULT_QUOTAS. */
  readonly quotas?: QuotaLimits;
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
  /** Exposed-credential scans; unset, their routes answer 503. */
  readonly secretScans?: ExposedKeysDeps;
  /** Code-host leak scans; unset, their routes answer 503. */
  readonly repoScans?: RepoScanDeps;
  readonly settings: ApiSettings;
  /** The enrich report's network parts (DNS, HTTPS, RDAP, Gravatar); unset: enrich answers 503. */
  readonly enrich?: EmailEnricherDeps;
  /** Database and object store reachable: what /readyz reports. */
  readonly ready: () => Promise<void>;
}
