/**
 * Sluice's embedded S3 server in a process of its own, for the scale-out scenario: the one S3
 * endpoint that every worker shares, as an S3 service would be, so that no worker hosts it (and
 * none of them shares a data dir with it, or with another worker).
 *
 *   SLUICE_S3_ACCESS_KEY_ID=K SLUICE_S3_SECRET_ACCESS_KEY=S node dist/bench/s3-server.js --dir D [--bucket sluice]
 *
 * Prints {"event":"listening","endpoint":...} once it answers (on 127.0.0.1), and exits on SIGTERM.
 */
import { parseArgs } from 'node:util';
import { ensureEmbeddedS3 } from '../src/storage/s3/embedded-s3-server.js';

export interface S3Listening {
  event: 'listening';
  endpoint: string;
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { dir: { type: 'string' }, bucket: { type: 'string', default: 'sluice' } } });
  const accessKeyId = process.env.SLUICE_S3_ACCESS_KEY_ID;
  const secretAccessKey = process.env.SLUICE_S3_SECRET_ACCESS_KEY;
  if (!values.dir || !accessKeyId || !secretAccessKey) throw new Error('--dir, SLUICE_S3_ACCESS_KEY_ID and SLUICE_S3_SECRET_ACCESS_KEY are required');
  const server = await ensureEmbeddedS3({ dataDir: values.dir, port: 0, bucket: values.bucket, region: 'us-east-1', accessKeyId, secretAccessKey });
  // A server found already running would belong to another process, which could leave with it.
  if (!server.hosting) throw new Error(`${values.dir} already has an embedded S3 server; give this one a directory of its own`);
  process.stdout.write(`${JSON.stringify({ event: 'listening', endpoint: server.endpoint } satisfies S3Listening)}\n`);
  const finish = (): void => {
    void server.close().finally(() => process.exit(0));
  };
  process.once('SIGTERM', finish);
  process.once('SIGINT', finish);
}

main().catch((e: unknown) => {
  process.stderr.write(`s3-server: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
