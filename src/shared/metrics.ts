import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The process's Prometheus metrics, in a registry of its own: prom-client's global registry would
 * make two engines in one process (tests, the demo) register every name twice and throw.
 *
 * Labels are closed sets (job types, row statuses, provider names, outcomes, operation names): an
 * account id or a key as a label would grow the series without bound and leak who uses the service.
 */
export interface Metrics {
  readonly registry: Registry;
  /** Rows committed by checkpoints, by job type and row status; incremented once per batch. */
  readonly rowsProcessed: Counter<'type' | 'status'>;
  /** Credits committed by jobs' checkpoints: what the ledger holds, never what was tried. */
  readonly creditsCharged: Counter;
  readonly lookupDuration: Histogram<'provider' | 'outcome'>;
  readonly lookupsInFlight: Gauge<'provider'>;
  readonly webhookDeliveries: Counter<'outcome'>;
  readonly checkpointDuration: Histogram;
  readonly objectStoreErrors: Counter<'operation'>;
  readonly databaseErrors: Counter<'operation'>;
  /** HTTP requests answered, by route template (never the raw URL: ids would grow the series), method and status class. */
  readonly httpRequests: Counter<'route' | 'method' | 'status_class'>;
  readonly httpDuration: Histogram<'route' | 'method' | 'status_class'>;
  /** Monitor runs whose job this process started, and runs it ended by outcome (completed, failed, cancelled). */
  readonly monitorRunsStarted: Counter;
  readonly monitorRunsEnded: Counter<'outcome'>;
  /** Targets whose tracked values changed, over the runs this process completed. */
  readonly monitorChanges: Counter;
}

/** Outcomes of `sluice_webhook_deliveries_total`, each present at 0 from start so that an alert on a rate sees 0, not nothing. */
export const DELIVERY_OUTCOMES = ['success', 'retry', 'failed', 'lost'] as const;
/** The S3 commands the object store sends: `sluice_object_store_errors_total` starts at 0 for each. */
export const OBJECT_STORE_OPERATIONS = ['CreateBucketCommand', 'DeleteObjectCommand', 'DeleteObjectsCommand', 'GetObjectCommand', 'HeadBucketCommand', 'HeadObjectCommand', 'PutObjectCommand', 'CreateMultipartUploadCommand', 'UploadPartCommand', 'CompleteMultipartUploadCommand', 'AbortMultipartUploadCommand'] as const;
export const MONITOR_RUN_OUTCOMES = ['completed', 'failed', 'cancelled'] as const;

/** The `outcome` label of `sluice_lookup_duration_seconds`. */
export const LOOKUP_OUTCOMES = {
  /** Every key answered (found or not). */
  ok: 'ok',
  /** The call returned, with a failure for at least one key (time-out, 5xx, breaker open). */
  failed: 'failed',
  /** The call threw. */
  error: 'error',
} as const;

export interface MetricsOptions {
  /** Job counts by status, read at scrape time; the same store-wide figures in every process. */
  jobCounts?: () => Promise<Record<string, number>>;
  /** Deliveries pending in the store, read at scrape time. */
  pendingDeliveries?: () => Promise<number>;
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  // Process figures: CPU, memory, handles, GC, and nodejs_eventloop_lag_seconds.
  collectDefaultMetrics({ register: registry });
  renameActiveGauges(registry);
  const { jobCounts, pendingDeliveries } = options;
  if (pendingDeliveries) {
    new Gauge({
      name: 'sluice_webhook_deliveries_pending',
      help: 'Webhook deliveries waiting to be sent or retried, read at scrape time (store-wide)',
      registers: [registry],
      async collect() {
        this.set(await pendingDeliveries());
      },
    });
  }
  if (jobCounts) {
    new Gauge({
      name: 'sluice_jobs',
      help: 'Jobs in the store by status, read at scrape time (store-wide: every process on the store reports the same figures)',
      labelNames: ['status'],
      registers: [registry],
      async collect() {
        this.reset();
        for (const [status, n] of Object.entries(await jobCounts())) this.set({ status }, n);
      },
    });
  }
  const metrics: Metrics = {
    registry,
    rowsProcessed: new Counter({ name: 'sluice_rows_processed_total', help: 'Rows committed by checkpoints, by job type and row status', labelNames: ['type', 'status'], registers: [registry] }),
    creditsCharged: new Counter({ name: 'sluice_credits_charged_total', help: 'Credits charged by committed batch checkpoints of jobs', registers: [registry] }),
    lookupDuration: new Histogram({
      name: 'sluice_lookup_duration_seconds',
      help: 'Duration of one provider call (a batch of keys), by provider and outcome',
      labelNames: ['provider', 'outcome'],
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    lookupsInFlight: new Gauge({ name: 'sluice_lookups_in_flight', help: 'Provider calls in flight in this process', labelNames: ['provider'], registers: [registry] }),
    webhookDeliveries: new Counter({
      name: 'sluice_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: success, retry (will be tried again), failed (given up), lost (claim lost)',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    checkpointDuration: new Histogram({
      name: 'sluice_checkpoint_duration_seconds',
      help: 'Duration of one batch checkpoint transaction (commitBatch), conflicts included',
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    objectStoreErrors: new Counter({ name: 'sluice_object_store_errors_total', help: 'Failed object store requests, by S3 command', labelNames: ['operation'], registers: [registry] }),
    databaseErrors: new Counter({
      name: 'sluice_database_errors_total',
      help: 'Store operations that failed for a fault of the database (not a refusal such as not found), by port and method',
      labelNames: ['operation'],
      registers: [registry],
    }),
    httpRequests: new Counter({
      name: 'sluice_http_requests_total',
      help: 'HTTP requests answered, by route template, method and status class (2xx, 4xx, ...)',
      labelNames: ['route', 'method', 'status_class'],
      registers: [registry],
    }),
    httpDuration: new Histogram({
      name: 'sluice_http_request_duration_seconds',
      help: 'Time from a request\'s arrival to its answer, by route template, method and status class',
      labelNames: ['route', 'method', 'status_class'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    monitorRunsStarted: new Counter({ name: 'sluice_monitor_runs_started_total', help: 'Monitor runs whose job this process started', registers: [registry] }),
    monitorRunsEnded: new Counter({ name: 'sluice_monitor_runs_ended_total', help: 'Monitor runs this process ended, by outcome: completed, failed, cancelled', labelNames: ['outcome'], registers: [registry] }),
    monitorChanges: new Counter({ name: 'sluice_monitor_changes_total', help: 'Targets with changed tracked values, over the monitor runs this process completed', registers: [registry] }),
  };
  // Present at 0 from start: an alert on `rate(...) > 0` must see 0 before the first failure, not no series.
  for (const outcome of DELIVERY_OUTCOMES) metrics.webhookDeliveries.inc({ outcome }, 0);
  for (const operation of OBJECT_STORE_OPERATIONS) metrics.objectStoreErrors.inc({ operation }, 0);
  for (const outcome of MONITOR_RUN_OUTCOMES) metrics.monitorRunsEnded.inc({ outcome }, 0);
  return metrics;
}

/**
 * prom-client's defaults name three gauges `nodejs_active_{handles,requests,resources}_total`, which
 * `promtool check metrics` flags (a `_total` suffix promises a counter). They go; their figures stay
 * under gauge names without the suffix.
 */
function renameActiveGauges(registry: Registry): void {
  const sources: Record<string, { help: string; count: () => number }> = {
    nodejs_active_handles: { help: 'Number of active libuv handles', count: () => (process as unknown as { _getActiveHandles(): unknown[] })._getActiveHandles().length },
    nodejs_active_requests: { help: 'Number of active libuv requests', count: () => (process as unknown as { _getActiveRequests(): unknown[] })._getActiveRequests().length },
    nodejs_active_resources: { help: 'Number of active resources keeping the event loop alive', count: () => process.getActiveResourcesInfo().length },
  };
  for (const [name, { help, count }] of Object.entries(sources)) {
    if (registry.getSingleMetric(`${name}_total`) === undefined) continue;
    registry.removeSingleMetric(`${name}_total`);
    // prom-client also reports most of them under the plain name (by type, with more labels).
    if (registry.getSingleMetric(name) !== undefined) continue;
    new Gauge({
      name,
      help,
      registers: [registry],
      collect() {
        this.set(count());
      },
    });
  }
}

/** The outcome label of a provider call that returned. */
export function lookupOutcome(outcomes: readonly { ok: boolean }[]): string {
  return outcomes.every((o) => o.ok) ? LOOKUP_OUTCOMES.ok : LOOKUP_OUTCOMES.failed;
}
