import type { JobLimits } from '../config/load-config.js';
import type { Limiters } from '../lookups/limiters.js';
import type { LookupProvider } from '../lookups/lookup-provider.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { Metrics } from '../shared/metrics.js';
import type { ObjectStore } from '../storage/s3/object-store.js';
import type { BillingPort, JobsPort, ResultCachePort, Store } from '../storage/store.js';

/** Everything the engine touches, passed in; the composition roots in src/main build it. */
export interface EngineDeps {
  readonly store: Store;
  /** `store.jobs`, `store.billing` and `store.results`, for brevity. */
  readonly jobs: JobsPort;
  readonly billing: BillingPort;
  readonly results: ResultCachePort;
  readonly objects: ObjectStore;
  readonly clock: Clock;
  readonly log: Logger;
  readonly limits: JobLimits;
  readonly repeatFreeDays: number;
  /** Lookup providers by lookup kind. */
  readonly providers: ReadonlyMap<string, LookupProvider>;
  readonly limiters: Limiters;
  /** This engine's own registry: several engines in one process must not share prom-client's global one. */
  readonly metrics: Metrics;
}
