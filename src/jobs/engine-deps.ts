import type { JobLimits } from '../config/load-config.js';
import type { BillingStore } from '../billing/billing-store.js';
import type { Limiters } from '../lookups/limiters.js';
import type { LookupProvider } from '../lookups/lookup-provider.js';
import type { ResultCache } from '../lookups/result-cache.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { ObjectStore } from '../storage/s3/object-store.js';
import type { Db } from '../storage/sqlite/open-database.js';
import type { Outbox } from '../webhooks/outbox.js';
import type { JobStore } from './job-store.js';

/** Everything the engine touches, passed in; the composition roots in src/main build it. */
export interface EngineDeps {
  readonly db: Db;
  readonly jobs: JobStore;
  readonly billing: BillingStore;
  readonly results: ResultCache;
  readonly objects: ObjectStore;
  readonly clock: Clock;
  readonly log: Logger;
  readonly limits: JobLimits;
  readonly repeatFreeDays: number;
  /** Lookup providers by lookup kind. */
  readonly providers: ReadonlyMap<string, LookupProvider>;
  readonly limiters: Limiters;
  /** For events that no job state carries, such as `lookup.completed`. */
  readonly outbox: Outbox;
}
