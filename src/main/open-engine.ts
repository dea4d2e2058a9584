import { randomBytes } from 'node:crypto';
import { sealKeyFingerprint } from '../storage/billing-key.js';
import { dataDirSecret } from '../shared/data-dir-secret.js';
import { openSecretScans } from './open-secret-scans.js';
import { applyHeapGrowth } from './heap-growth.js';
import fs from 'node:fs';
import path from 'node:path';
import { KeyStore } from '../auth/key-store.js';
import { openSealer } from './open-sealer.js';
import { WorkflowSecrets } from '../webhooks/workflow-secrets.js';
import { stepDeliveryHeaders } from '../workflows/step-delivery-headers.js';
import { SessionStore } from '../auth/session-store.js';
import type { ShreddingSealer } from '../auth/data-keys.js';
import { REMOTE_CAPABLE_KINDS, type Config, type RemoteCapableKind } from '../config/load-config.js';
import type { EngineDeps } from '../jobs/engine-deps.js';
import type { Engine } from '../jobs/engine.js';
import { JobService } from '../jobs/job-service.js';

export type { Engine };
import { COMPANY_KIND, EmbeddedCompanyDirectory } from '../lookups/company/embedded-company-directory.js';
import { EmbeddedGenderEngine } from '../lookups/gender/embedded-gender-engine.js';
import { Limiters } from '../lookups/limiters.js';
import { SlotHolder } from '../lookups/shared-semaphore.js';
import { EmbeddedBreachIndex, PHONE_BREACHES_KIND } from '../lookups/phone/embedded-breach-index.js';
import { EMAIL_BREACHES_KIND, EmbeddedEmailBreachIndex } from '../lookups/email/embedded-email-breach-index.js';
import { VALIDITY_KIND } from '../lookups/validity/validity-result.js';
import { openValidityVerifier } from './open-validity.js';
import { openDomainReport } from './open-domain-report.js';
import { DOMAIN_REPORT_KIND } from '../lookups/domain/domain-report.js';
import type { LookupProvider } from '../lookups/lookup-provider.js';
import { EmbeddedIpNetwork, IP_NETWORK_KIND, PASSIVE_DNS_KIND } from '../lookups/ip/embedded-ip-network.js';
import { CircuitBreaker } from '../lookups/remote/circuit-breaker.js';
import { RemoteLookupProvider } from '../lookups/remote/remote-provider.js';
import { systemClock, type Clock } from '../shared/clock.js';
import { AppError, ERROR_CODES, isAppError } from '../shared/errors.js';
import { PASSWORD_BREACHES_KIND } from '../lookups/password/password-breach-provider.js';
import { openPasswordBreaches } from './open-password-range.js';
import type { Logger } from '../shared/logger.js';
import { createMetrics, type Metrics } from '../shared/metrics.js';
import { JOB_STATUSES } from '../storage/job-states.js';
import { ensureEmbeddedS3, withFailover } from '../storage/s3/embedded-s3-server.js';
import type { ObjectStore } from '../storage/s3/object-store.js';
import { S3ObjectStore } from '../storage/s3/s3-object-store.js';
import { openStore } from '../storage/open-store.js';
import type { Store } from '../storage/store.js';
import { jobEndEvent, jobPausedEvent, withDownloadUrls } from '../jobs/job-events.js';
import { chainEnrichers, withChangesUrl } from '../monitors/run-events.js';
import { systemResolver, type Resolver } from '../webhooks/address-policy.js';
import { HttpTransport } from '../webhooks/http-transport.js';
import { WebhookClient } from '../webhooks/webhook-client.js';
import { WebhookStore } from '../webhooks/webhook-store.js';
import type { Webhooks } from '../webhooks/webhooks.js';

/** What tests and the demo may swap: the DNS resolver and extra trust for webhook receivers. */
export interface EngineOverrides {
  clock?: Clock;
  resolve?: Resolver;
  webhookCa?: string;
  /** An object store to use instead of the configured one (tests: the in-memory twin, no S3 server). */
  objects?: ObjectStore;
}


/** Builds the real dependencies from configuration: the one place that knows what is real. */
export async function openEngine(config: Config, log: Logger, overrides: EngineOverrides = {}): Promise<Engine> {
  const clock = overrides.clock ?? systemClock;
  // Every Sluice process opens its engine once, at start-up: the process is Sluice's own.
  applyHeapGrowth(config.heapGrowthPercent);
  fs.mkdirSync(config.dataDir, { recursive: true });
  // Seals newly created API keys for the reveal window, and webhook secrets; never in the database.
  // Known before the store opens: the billing cache's key names derive from it, and a migration
  // hashes existing keys with it (src/storage/billing-key.ts).
  const sealKey = Buffer.from(config.sealKey ?? dataDirSecret(config.dataDir, 'seal.key', () => randomBytes(32).toString('base64')), 'base64');
  const store = await openStore(
    { dataDir: config.dataDir, sqlite: config.sqlite, databaseUrl: config.database.url, poolSize: config.database.poolSize, sealKey },
    { jobEnded: jobEndEvent, jobPaused: jobPausedEvent },
  );
  const metrics = createMetrics({ jobCounts: () => jobCounts(store), pendingDeliveries: () => store.deliveries.pendingCount() });
  countDatabaseErrors(store, metrics);
  const { objects, close: closeObjects } = overrides.objects ? { objects: overrides.objects, close: async () => undefined } : await openObjectStore(config, log, metrics);
  const { providers, remotes } = openProviders(config, store);
  const passwordBreaches = openPasswordBreaches(config, store, clock);
  providers.set(PASSWORD_BREACHES_KIND, passwordBreaches);
  // Its own holder of store slots (per MX host); it renews only while a session holds a slot.
  providers.set(VALIDITY_KIND, openValidityVerifier(config, clock, new SlotHolder(store.limits, clock), store.limits, store.results));
  const domainReport = openDomainReport(config, clock, store, providers.get(COMPANY_KIND));
  providers.set(DOMAIN_REPORT_KIND, domainReport.provider);
  remotes.push(...domainReport.remotes);
  const deps: EngineDeps = {
    store,
    jobs: store.jobs,
    billing: store.billing,
    results: store.results,
    objects,
    clock,
    log,
    limits: config.jobs,
    repeatFreeDays: config.billing.repeatFreeDays,
    providers,
    limiters: new Limiters({
      accountConcurrency: config.jobs.accountConcurrency,
      providerConcurrency: config.jobs.providerConcurrency,
      connectionsPerProcess: config.providers.connections,
      slots: { holder: new SlotHolder(store.limits, clock), clock },
      metrics,
    }),
    metrics,
  };
  await requireSharedSealKey(store, sealKey);
  const sealer = openSealer(config, store, sealKey);
  const jobService = new JobService(deps);
  const secretScans = openSecretScans(config, store, sealKey, clock, log, { allowPrivate: config.webhooks.allowPrivate, resolve: overrides.resolve ?? systemResolver });
  const webhooks = openWebhooks(config, store, sealer, jobService, deps.objects, overrides);
  return {
    config,
    deps,
    jobService,
    auth: {
      keys: new KeyStore(store.keys, sealer, config.api.keyRevealSeconds * 1000, () => clock.now()),
      sessions: new SessionStore(store.sessions, config.api.sessionTtlSeconds * 1000),
    },
    webhooks,
    secretScans: secretScans.scans,
    repoScans: secretScans.repoScans,
    async close() {
      await secretScans.close();
      deps.limiters.close();
      await webhooks.client.close();
      await Promise.all(remotes.map((remote) => remote.close()));
      await passwordBreaches.close();
      await closeObjects();
      await store.close();
    },
  };
}

/**
 * Each lookup's provider by kind: a RemoteLookupProvider where the kind's URL is set, else its
 * embedded engine. `satisfies` keeps this list and the kinds config knows the same.
 */
function openProviders(config: Config, store: Store): { providers: Map<string, LookupProvider>; remotes: RemoteLookupProvider[] } {
  const embedded = {
    gender: () => new EmbeddedGenderEngine(),
    [PHONE_BREACHES_KIND]: () => new EmbeddedBreachIndex(store.breaches),
    [COMPANY_KIND]: () => new EmbeddedCompanyDirectory(store.companies),
    [EMAIL_BREACHES_KIND]: () => new EmbeddedEmailBreachIndex(store.emailBreaches),
  } satisfies Record<RemoteCapableKind, () => LookupProvider>;
  const providers = new Map<string, LookupProvider>();
  const remotes: RemoteLookupProvider[] = [];
  for (const kind of REMOTE_CAPABLE_KINDS) {
    const { url, auth } = config.providers[kind];
    if (url === undefined) {
      providers.set(kind, embedded[kind]());
      continue;
    }
    const remote = new RemoteLookupProvider({
      kind,
      baseUrl: url,
      ...(auth ? { authHeader: auth } : {}),
      timeoutMs: config.providers.timeoutMs,
      connections: config.providers.connections,
      maxBatch: config.providers.maxBatch,
      // One breaker per service for every process on the store; a machine configured with another
      // URL for the kind has a breaker of its own.
      breaker: new CircuitBreaker({ records: store.limits, name: `${kind} ${serviceOf(url)}` }),
    });
    remotes.push(remote);
    providers.set(kind, remote);
  }
  // The IP network lookup answers from imported data; only its passive DNS section is remote.
  let passiveDns: RemoteLookupProvider | undefined;
  if (config.passiveDns.url !== undefined) {
    passiveDns = new RemoteLookupProvider({
      kind: PASSIVE_DNS_KIND,
      baseUrl: config.passiveDns.url,
      ...(config.passiveDns.auth ? { authHeader: config.passiveDns.auth } : {}),
      timeoutMs: config.providers.timeoutMs,
      connections: config.providers.connections,
      maxBatch: config.providers.maxBatch,
      breaker: new CircuitBreaker({ records: store.limits, name: `${PASSIVE_DNS_KIND} ${serviceOf(config.passiveDns.url)}` }),
    });
    remotes.push(passiveDns);
  }
  providers.set(IP_NETWORK_KIND, new EmbeddedIpNetwork(store.ipNetwork, passiveDns));
  return { providers, remotes };
}

/**
 * Every process on a store must seal with one key, or secrets sealed by one machine are garbage to
 * the next: the first process records a fingerprint of its key (an HMAC, which tells nothing of the
 * key) and any process with another key refuses to start, before it writes anything.
 */
async function requireSharedSealKey(store: Store, sealKey: Buffer): Promise<void> {
  const ours = sealKeyFingerprint(sealKey);
  const recorded = await store.limits.updateShared('seal-key-fingerprint', (value) => ({ value: value ?? ours, result: value ?? ours }));
  if (recorded !== ours) {
    await store.close();
    throw new AppError(
      ERROR_CODES.badConfig,
      'SLUICE_SEAL_KEY differs from the key the other processes on this database seal with: every machine that shares a database must be given the same SLUICE_SEAL_KEY',
      { details: { variable: 'SLUICE_SEAL_KEY' } },
    );
  }
}

/** The service a URL names, without any credentials or query it carries. */
function serviceOf(url: string): string {
  const parsed = new URL(url);
  return `${parsed.origin}${parsed.pathname}`;
}

function openWebhooks(config: Config, store: Store, sealer: ShreddingSealer, jobService: JobService, objects: ObjectStore, overrides: EngineOverrides): Webhooks {
  const policy = { allowPrivate: config.webhooks.allowPrivate, resolve: overrides.resolve ?? systemResolver };
  const webhookStore = new WebhookStore(store.webhooks, sealer);
  const workflowSecrets = new WorkflowSecrets(store.workflowSecrets, sealer);
  const client = new WebhookClient({
    webhooks: webhookStore,
    transport: new HttpTransport(policy, overrides.webhookCa ? { ca: overrides.webhookCa } : {}),
    telegramTransport: new HttpTransport(undefined),
    telegramApiUrl: config.webhooks.telegramApiUrl,
    attemptTimeoutMs: config.webhooks.attemptTimeoutMs,
    enrich: chainEnrichers(withDownloadUrls(jobService, config.presignExpiresSeconds), withChangesUrl(objects, config.presignExpiresSeconds)),
    now: () => (overrides.clock ?? systemClock).now(),
    extraHeaders: (accountId, eventType, payload) => stepDeliveryHeaders(store, workflowSecrets, accountId, eventType, payload),
  });
  return { store: webhookStore, deliveries: store.deliveries, client, policy, attemptTimeoutMs: config.webhooks.attemptTimeoutMs, creditAlerts: store.creditAlerts, workflowSecrets };
}

async function openObjectStore(config: Config, log: Logger, metrics: Metrics): Promise<{ objects: ObjectStore; close: () => Promise<void> }> {
  const { s3 } = config;
  const deps = { onError: (operation: string) => metrics.objectStoreErrors.inc({ operation }) };
  if (s3.endpoint !== undefined) {
    const store = new S3ObjectStore({
      endpoint: s3.endpoint,
      region: s3.region,
      bucket: s3.bucket,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: s3.forcePathStyle,
    }, deps);
    await store.ensureBucket();
    return { objects: store, close: async () => store.destroy() };
  }
  const credentials =
    s3.accessKeyId !== undefined && s3.secretAccessKey !== undefined
      ? { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
      : embeddedCredentials(config.dataDir);
  const server = await ensureEmbeddedS3({ dataDir: config.dataDir, port: s3.embeddedPort, bucket: s3.bucket, region: s3.region, log, ...credentials });
  const store = new S3ObjectStore({ endpoint: server.endpoint, region: s3.region, bucket: s3.bucket, forcePathStyle: true, unsignedPayload: true, ...credentials }, deps);
  // Whoever hosts the embedded server may exit first; the next request then hosts it here.
  const objects = withFailover(store, () => server.reconnect());
  return {
    objects,
    close: async () => {
      store.destroy();
      await server.close();
    },
  };
}

/**
 * The embedded server's key pair, made once per data dir. A secret known to everyone would let
 * anyone mint download URLs, so it is random and readable by this user only.
 */
function embeddedCredentials(dataDir: string): { accessKeyId: string; secretAccessKey: string } {
  const text = dataDirSecret(dataDir, 's3-credentials.json', () =>
    JSON.stringify({ accessKeyId: `sluice-${randomBytes(6).toString('hex')}`, secretAccessKey: randomBytes(24).toString('base64url') }),
  );
  return JSON.parse(text) as { accessKeyId: string; secretAccessKey: string };
}

/**
 * `sluice_jobs{status}` at scrape time: one count per status (six small reads, on the status
 * index), never the job rows themselves. Store-wide, so every process on the store reports it.
 */
async function jobCounts(store: Store): Promise<Record<string, number>> {
  const statuses = Object.values(JOB_STATUSES);
  const totals = await Promise.all(statuses.map(async (status) => (await store.jobs.list({ status, limit: 1, offset: 0 })).total));
  return Object.fromEntries(statuses.map((status, i) => [status, totals[i]!]));
}

/**
 * Counts store operations that fail for a fault of the database, at the one seam every layer
 * shares: each port's methods. Deliberate refusals (not found, conflict: errors with an HTTP
 * status) are answers, not faults. The ports are patched in place, so every holder of `store`
 * counts; the methods keep their adapter as `this`.
 */
function countDatabaseErrors(store: Store, metrics: Metrics): void {
  // An adapter may serve two ports from one object: patched twice, its errors would count twice.
  const patched = new Set<object>();
  for (const [portName, port] of Object.entries(store)) {
    if (port === null || typeof port !== 'object' || patched.has(port)) continue;
    patched.add(port);
    for (const method of methodsOf(port)) {
      const original = (port as Record<string, unknown>)[method] as (...args: unknown[]) => unknown;
      const operation = `${portName}.${method}`;
      // Present at 0 from start, so that an alert sees 0 before the first failure rather than no series.
      metrics.databaseErrors.inc({ operation }, 0);
      (port as Record<string, unknown>)[method] = function (this: unknown, ...args: unknown[]) {
        const out = original.apply(port, args);
        if (!(out instanceof Promise)) return out;
        // Rethrown on the promise the caller gets, so a rejection nobody handles still surfaces.
        return out.catch((e: unknown) => {
          if (!isAppError(e) || e.statusCode === undefined) metrics.databaseErrors.inc({ operation });
          throw e;
        });
      };
    }
  }
}

function methodsOf(port: object): string[] {
  const names = new Set<string>(Object.keys(port).filter((name) => typeof (port as Record<string, unknown>)[name] === 'function'));
  for (let proto = Object.getPrototypeOf(port); proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto)) {
    for (const name of Object.getOwnPropertyNames(proto)) if (name !== 'constructor' && typeof (port as Record<string, unknown>)[name] === 'function') names.add(name);
  }
  return [...names];
}
