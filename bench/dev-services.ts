/**
 * The two services that machines running Sluice share, on loopback, for trying the several-machines
 * set-up on one machine: a throwaway PostgreSQL (bench/postgres-server.ts: durability off, its files
 * removed at the end) and an S3 endpoint (Sluice's embedded S3 server in a process of its own).
 *
 *   node dist/bench/dev-services.js [--dir DIR]
 *
 * Writes DIR/env.sh (default /tmp/sluice-dev-services) with the settings every "machine" sources:
 * SLUICE_DATABASE_URL, SLUICE_S3_ENDPOINT and its keys, SLUICE_SEAL_KEY. Runs until SIGINT or
 * SIGTERM. Not for data anyone keeps: use a real PostgreSQL and S3 (or MinIO) for that.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ensureEmbeddedS3 } from '../src/storage/s3/embedded-s3-server.js';
import { startPostgres } from './postgres-server.js';

const USAGE = 'usage: node dist/bench/dev-services.js [--dir DIR]   (default DIR: /tmp/sluice-dev-services)';

/** A usage mistake, said in one line with the usage, not as a stack trace. */
class UsageError extends Error {}

async function main(): Promise<void> {
  let values: { dir: string; help: boolean };
  try {
    ({ values } = parseArgs({ options: { dir: { type: 'string', default: '/tmp/sluice-dev-services' }, help: { type: 'boolean', short: 'h', default: false } } }));
  } catch (e: unknown) {
    throw new UsageError(e instanceof Error ? e.message : String(e));
  }
  if (values.help) {
    process.stdout.write(`${USAGE}\nStarts a throwaway PostgreSQL and an S3 endpoint on loopback and writes DIR/env.sh with their settings.\n`);
    return;
  }
  const dir = path.resolve(values.dir);
  fs.mkdirSync(dir, { recursive: true });
  // Whoever waits for env.sh must not read the last run's, whose services are gone.
  fs.rmSync(path.join(dir, 'env.sh'), { force: true });
  const postgres = await startPostgres();
  const keys = { accessKeyId: `dev-${randomBytes(4).toString('hex')}`, secretAccessKey: randomBytes(18).toString('base64url') };
  const s3 = await ensureEmbeddedS3({ dataDir: path.join(dir, 's3-host'), port: 0, bucket: 'sluice', region: 'us-east-1', ...keys });
  const env = [
    `export SLUICE_DATABASE_URL=${postgres.url}`,
    `export SLUICE_S3_ENDPOINT=${s3.endpoint}`,
    `export SLUICE_S3_ACCESS_KEY_ID=${keys.accessKeyId}`,
    `export SLUICE_S3_SECRET_ACCESS_KEY=${keys.secretAccessKey}`,
    `export SLUICE_SEAL_KEY=${randomBytes(32).toString('base64')}`,
  ].join('\n');
  fs.writeFileSync(path.join(dir, 'env.sh'), `${env}\n`, { mode: 0o600 });
  process.stdout.write(`${env}\n# written to ${path.join(dir, 'env.sh')}; Ctrl-C stops both services\n`);
  const stop = (): void => {
    void Promise.all([s3.close(), postgres.stop()]).finally(() => process.exit(0));
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}

main().catch((e: unknown) => {
  if (e instanceof UsageError) {
    process.stderr.write(`dev-services: ${e.message}\n${USAGE}\n`);
    process.exit(2);
  }
  process.stderr.write(`dev-services: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
