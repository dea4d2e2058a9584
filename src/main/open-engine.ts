import { randomBytes } from 'node:crypto';
import { dataDirSecret } from './data-dir-secret.js';
import fs from 'node:fs';
import path from 'node:path';
import { KeyStore } from '../auth/key-store.js';
import { SessionStore } from '../auth/session-store.js';
import { BillingStore } from '../billing/billing-store.js';
import type { Config } from '../config/load-config.js';
import type { EngineDeps } from '../jobs/engine-deps.js';
import type { Engine } from '../jobs/engine.js';
import { JobService } from '../jobs/job-service.js';

export type { Engine };
import { JobStore } from '../jobs/job-store.js';
import { EmbeddedGenderEngine } from '../lookups/gender/embedded-gender-engine.js';
import { Limiters } from '../lookups/limiters.js';
import type { LookupProvider } from '../lookups/lookup-provider.js';
import { ResultCache } from '../lookups/result-cache.js';
import { systemClock, type Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import { ensureEmbeddedS3, withFailover } from '../storage/s3/embedded-s3-server.js';
import type { ObjectStore } from '../storage/s3/object-store.js';
import { S3ObjectStore } from '../storage/s3/s3-object-store.js';
import { openDatabase } from '../storage/sqlite/open-database.js';


/** Builds the real dependencies from configuration: the one place that knows what is real. */
export async function openEngine(config: Config, log: Logger, clock: Clock = systemClock): Promise<Engine> {
  fs.mkdirSync(config.dataDir, { recursive: true });
  const db = openDatabase(path.join(config.dataDir, 'sluice.db'), config.sqlite);
  const { objects, close: closeObjects } = await openObjectStore(config, log);
  const providers = new Map<string, LookupProvider>([['gender', new EmbeddedGenderEngine()]]);
  const deps: EngineDeps = {
    db,
    jobs: new JobStore(db),
    billing: new BillingStore(db),
    results: new ResultCache(db),
    objects,
    clock,
    log,
    limits: config.jobs,
    repeatFreeDays: config.billing.repeatFreeDays,
    providers,
    limiters: new Limiters(config.jobs.accountConcurrency, config.jobs.providerConcurrency),
  };
  // Seals newly created API keys for the reveal window; one per data dir, never in the database.
  const sealKey = Buffer.from(dataDirSecret(config.dataDir, 'seal.key', () => randomBytes(32).toString('base64')), 'base64');
  return {
    config,
    deps,
    jobService: new JobService(deps),
    auth: {
      keys: new KeyStore(db, sealKey, config.api.keyRevealSeconds * 1000),
      sessions: new SessionStore(db, config.api.sessionTtlSeconds * 1000),
    },
    async close() {
      await closeObjects();
      db.close();
    },
  };
}

async function openObjectStore(config: Config, log: Logger): Promise<{ objects: ObjectStore; close: () => Promise<void> }> {
  const { s3 } = config;
  if (s3.endpoint !== undefined) {
    const store = new S3ObjectStore({
      endpoint: s3.endpoint,
      region: s3.region,
      bucket: s3.bucket,
      accessKeyId: s3.accessKeyId,
      secretAccessKey: s3.secretAccessKey,
      forcePathStyle: s3.forcePathStyle,
    });
    await store.ensureBucket();
    return { objects: store, close: async () => store.destroy() };
  }
  const credentials =
    s3.accessKeyId !== undefined && s3.secretAccessKey !== undefined
      ? { accessKeyId: s3.accessKeyId, secretAccessKey: s3.secretAccessKey }
      : embeddedCredentials(config.dataDir);
  const server = await ensureEmbeddedS3({ dataDir: config.dataDir, port: s3.embeddedPort, bucket: s3.bucket, region: s3.region, log, ...credentials });
  const store = new S3ObjectStore({ endpoint: server.endpoint, region: s3.region, bucket: s3.bucket, forcePathStyle: true, ...credentials });
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
