import { sweepSealsPeriodically } from '../auth/key-store.js';
import { sweepRetentionPeriodically } from '../jobs/retention-sweep.js';
import { Worker } from '../jobs/worker.js';
import { driveMonitorRuns } from '../monitors/run-driver.js';
import { scheduleMonitorsPeriodically } from '../monitors/scheduler.js';
import { driveWorkflowRuns, workflowDriverDeps } from '../workflows/run-driver.js';
import { scheduleWorkflowsPeriodically } from '../workflows/workflow-scheduler.js';
import type { Engine } from '../jobs/engine.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { startMetricsListener } from '../shared/metrics-listener.js';
import { webhookSender } from '../webhooks/webhooks.js';
import { parseCommand, positiveInt, type CliIo } from './cli-io.js';
import { driveRepoScans } from '../jobs/repo-scan-job.js';

export const WORKER_USAGE = 'sluice worker [--concurrency N]';

/**
 * Runs workers (and the webhook sender, unless SLUICE_WEBHOOK_SENDER=false) until SIGTERM or
 * SIGINT, then finishes the batches and attempts in flight and releases leases.
 */
export async function workerCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommand(args, { concurrency: { type: 'string' } }, 0);
  const concurrency = positiveInt(values.concurrency as string | undefined, '--concurrency', engine.config.jobs.workerConcurrency);
  if (concurrency < 1) throw new AppError(ERROR_CODES.badArgument, '--concurrency must be at least 1');
  const worker = new Worker(engine.deps);
  // A deployment may run its API on other machines, or only now and then: the worker processes
  // must drop expired sealed key copies too, or a backup taken meanwhile gives up live keys.
  const stopSweeping = sweepSealsPeriodically(engine.auth.keys, () => engine.deps.clock.now(), (error) =>
    engine.deps.log.warn({ err: error }, 'could not drop expired sealed API keys'),
  );
  const stopRetention = sweepRetentionPeriodically(engine.deps, { days: engine.config.retentionDays });
  const stopSchedule = scheduleMonitorsPeriodically({ monitors: engine.deps.store.monitors, clock: engine.deps.clock, log: engine.deps.log });
  const stopRepoScans = engine.repoScans ? driveRepoScans(engine.repoScans, worker.id, engine.config.jobs.pollMs) : undefined;
  const stopRuns = driveMonitorRuns({ engine: engine.deps, jobService: engine.jobService }, worker.id, engine.config.jobs.pollMs);
  const stopWorkflows = driveWorkflowRuns(workflowDriverDeps(engine.deps), worker.id, engine.config.jobs.pollMs);
  const stopWorkflowSchedule = scheduleWorkflowsPeriodically({ store: engine.deps.store, clock: engine.deps.clock, log: engine.deps.log, runsInFlight: engine.config.workflows.runsInFlight });
  const { metrics: metricsConfig } = engine.config;
  // No API in this process: Prometheus scrapes a listener of its own, on SLUICE_HOST (loopback by default).
  const metrics = metricsConfig.enabled && metricsConfig.port > 0
    ? await startMetricsListener(engine.deps.metrics.registry, { host: engine.config.host, port: metricsConfig.port, token: metricsConfig.token })
    : undefined;
  if (metrics) io.stderr.write(`metrics on http://${metrics.address.address}:${metrics.address.port}/metrics\n`);
  const sender = engine.config.webhooks.runSender ? webhookSender(engine.webhooks, engine.deps.clock, engine.deps.log, { pollMs: engine.config.jobs.pollMs, metrics: engine.deps.metrics }) : undefined;
  const stop = () => {
    worker.stop();
    sender?.stop();
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  engine.deps.log.info({ worker: worker.id, concurrency }, 'worker started');
  io.stderr.write(`worker ${worker.id} running with ${concurrency} slot(s); Ctrl-C to stop\n`);
  // If the worker fails, the sender must stop, and end, before the engine closes under it.
  const [work] = await Promise.allSettled([worker.run({ concurrency }).finally(() => sender?.stop()), sender?.run()]);
  stopSweeping();
  await Promise.all([stopRetention(), stopSchedule(), stopRuns(), stopRepoScans?.(), stopWorkflows(), stopWorkflowSchedule(), metrics?.close()]);
  if (work.status === 'rejected') throw work.reason;
  engine.deps.log.info({ worker: worker.id }, 'worker stopped');
  return 0;
}
