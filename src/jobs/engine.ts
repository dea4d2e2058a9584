import type { KeyStore } from '../auth/key-store.js';
import type { SessionStore } from '../auth/session-store.js';
import type { Config } from '../config/load-config.js';
import type { Webhooks } from '../webhooks/webhooks.js';
import type { EngineDeps } from './engine-deps.js';
import type { JobService } from './job-service.js';
import type { ExposedKeysDeps } from './exposed-keys-scan.js';
import type { RepoScanDeps } from './repo-scan-job.js';

/** An open engine: what commands and the API work with. Built by src/main/open-engine.ts. */
export interface Engine {
  readonly config: Config;
  readonly deps: EngineDeps;
  readonly jobService: JobService;
  readonly auth: { readonly keys: KeyStore; readonly sessions: SessionStore };
  readonly webhooks: Webhooks;
  /** Exposed-credential scans (spec 4.6); absent in engines built without them. */
  readonly secretScans?: ExposedKeysDeps;
  /** Code-host leak scans (spec 4.6), run by workers under a lease. */
  readonly repoScans?: RepoScanDeps;
  close(): Promise<void>;
}
