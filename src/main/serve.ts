import { sweepRetentionPeriodically } from '../jobs/retention-sweep.js';
import { Worker } from '../jobs/worker.js';
import { driveMonitorRuns } from '../monitors/run-driver.js';
import { driveRepoScans } from '../jobs/repo-scan-job.js';
import { scheduleMonitorsPeriodically } from '../monitors/scheduler.js';
import { driveWorkflowRuns, workflowDriverDeps } from '../workflows/run-driver.js';
import { scheduleWorkflowsPeriodically } from '../workflows/workflow-scheduler.js';
import { webhookSender } from '../webhooks/webhooks.js';
import { buildApp } from '../api/build-app.js';
import type { ClientLimits } from '../api/slow-clients.js';
import type { Config } from '../config/load-config.js';
import { apiDeps } from './open-api.js';
import type { Engine } from './open-engine.js';
import { parseCommand, positiveInt, type CliIo } from '../cli/cli-io.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { AddressInfo } from 'node:net';

export const SERVE_USAGE = 'sluice serve [--port N] [--host 127.0.0.1|0.0.0.0] [--no-worker]';

/**
 * The HTTP API and, unless told otherwise, job workers and the webhook sender in the same process. SIGTERM or SIGINT:
 * stop taking requests, let in-flight requests and the current batches finish, release leases.
 */
export async function serveCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommand(args, { port: { type: 'string' }, host: { type: 'string' }, 'no-worker': { type: 'boolean', default: false } }, 0);
  const port = positiveInt(values.port as string | undefined, '--port', engine.config.port);
  const app = await buildApp(apiDeps(engine), engine.deps.log, clientLimits(engine.config));
  // Loopback unless asked: the API holds accounts and uploads, and the old default (every
  // interface) opened it to the whole network while the banner said 127.0.0.1.
  const host = (values.host as string | undefined)?.trim() || engine.config.host;
  try {
    await app.listen({ port, host });
  } catch (e: unknown) {
    await app.close();
    throw listenError(e, host, port);
  }
  const worker = engine.config.api.runWorker && !values['no-worker'] ? new Worker(engine.deps) : undefined;
  const sender = engine.config.webhooks.runSender ? webhookSender(engine.webhooks, engine.deps.clock, engine.deps.log, { pollMs: engine.config.jobs.pollMs, metrics: engine.deps.metrics }) : undefined;
  const working = worker?.run({ concurrency: engine.config.jobs.workerConcurrency }).finally(() => sender?.stop());
  const settled = Promise.allSettled([working, sender?.run()]);
  const stopRetention = sweepRetentionPeriodically(engine.deps, { days: engine.config.retentionDays });
  // Where workers run, the schedule runs: `serve --no-worker` behind a load balancer leaves it to the worker machines.
  const stopSchedule = worker ? scheduleMonitorsPeriodically({ monitors: engine.deps.store.monitors, clock: engine.deps.clock, log: engine.deps.log }) : undefined;
  const stopRepoScans = worker && engine.repoScans ? driveRepoScans(engine.repoScans, worker.id, engine.config.jobs.pollMs) : undefined;
  const stopRuns = worker ? driveMonitorRuns({ engine: engine.deps, jobService: engine.jobService }, worker.id, engine.config.jobs.pollMs) : undefined;
  const stopWorkflows = worker ? driveWorkflowRuns(workflowDriverDeps(engine.deps), worker.id, engine.config.jobs.pollMs) : undefined;
  const stopWorkflowSchedule = worker ? scheduleWorkflowsPeriodically({ store: engine.deps.store, clock: engine.deps.clock, log: engine.deps.log, runsInFlight: engine.config.workflows.runsInFlight }) : undefined;
  io.stderr.write(`sluice API listening on ${boundAddress(app.server.address())}${worker ? ` with worker ${worker.id}` : ''}${sender ? ' and webhook sender' : ''}\n`);

  await new Promise<void>((resolve) => {
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
    // A worker that fails (a bug, not a blip) takes the process down, so a supervisor restarts it.
    working?.catch(() => resolve());
  });
  io.stderr.write('stopping: finishing in-flight requests and batches\n');
  worker?.stop();
  sender?.stop();
  const [, [work]] = await Promise.all([app.close(), settled, stopRetention(), stopSchedule?.(), stopRuns?.(), stopRepoScans?.(), stopWorkflows?.(), stopWorkflowSchedule?.()]);
  if (work.status === 'rejected') throw work.reason;
  return 0;
}

/** The largest body is the upload limit: JSON bodies are capped far below it. */
function clientLimits(config: Config): ClientLimits {
  const { api } = config;
  return {
    headersTimeoutMs: api.headersTimeoutSeconds * 1000,
    bodyIdleMs: api.bodyIdleSeconds * 1000,
    bodyMinBytesPerSecond: api.bodyMinBytesPerSecond,
    maxBodyBytes: api.maxUploadBytes,
    maxConnections: api.maxConnections,
    // Per TCP peer: behind a trusted proxy every client has the proxy's address, so the proxy limits them.
    ...(api.trustProxy === undefined ? { perAddress: { connections: api.maxConnectionsPerAddress, requests: api.maxRequestsPerAddress } } : {}),
  };
}

/**
 * The address the socket holds, not the one asked for: Fastify's own answer names 127.0.0.1 for a
 * wildcard bind, which is how the old banner hid that the API was open on every interface.
 */
export function boundAddress(address: AddressInfo | string | null): string {
  if (address === null || typeof address === 'string') return String(address);
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  const wildcard = address.address === '0.0.0.0' || address.address === '::';
  return `http://${host}:${address.port}${wildcard ? ' (all interfaces)' : ''}`;
}

/** A port in use or not ours to bind is a user's mistake: one line saying what to change, no stack. */
export function listenError(e: unknown, host: string, port: number): unknown {
  const code = (e as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EADDRINUSE') {
    return new AppError(ERROR_CODES.badArgument, `port ${port} on ${host} is in use by another process; stop it, or choose another with --port N or SLUICE_PORT`, { cause: e });
  }
  if (code === 'EACCES') return new AppError(ERROR_CODES.badArgument, `not allowed to listen on port ${port} on ${host}; choose a port above 1023 with --port N or SLUICE_PORT`, { cause: e });
  if (code === 'EADDRNOTAVAIL') return new AppError(ERROR_CODES.badArgument, `${host} is not an address of this machine; use --host 127.0.0.1 or 0.0.0.0`, { cause: e });
  return e;
}
