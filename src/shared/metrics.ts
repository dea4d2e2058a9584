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
}

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
}

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  // Process figures: CPU, memory, handles, GC, and nodejs_eventloop_lag_seconds.
  collectDefaultMetrics({ register: registry });
  const { jobCounts } = options;
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
  return {
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
  };
}

/** The outcome label of a provider call that returned. */
export function lookupOutcome(outcomes: readonly { ok: boolean }[]): string {
  return outcomes.every((o) => o.ok) ? LOOKUP_OUTCOMES.ok : LOOKUP_OUTCOMES.failed;
}
