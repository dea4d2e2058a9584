import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config/load-config.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { readCsvRows } from '../jobs/csv-reader.js';
import { csvLine } from '../jobs/csv-writer.js';
import { openEngine } from './open-engine.js';
import { createLogger } from '../shared/logger.js';
import { parseCommand, type CliIo } from '../cli/cli-io.js';
import { formatJob } from '../cli/format-job.js';
import { runJob } from '../cli/run-command.js';
import { checkWebhookUrl } from '../webhooks/address-policy.js';
import { verifySignatures } from '../webhooks/sign.js';
import { WEBHOOK_EVENTS, WEBHOOK_KINDS } from '../webhooks/webhook-store.js';
import { webhookSender } from '../webhooks/webhooks.js';
import { startDemoReceiver } from './demo-receiver.js';

export const DEMO_USAGE = 'sluice demo [--data-dir DIR] [--file CSV]';

const FIXTURE = fileURLToPath(new URL('../../../fixtures/gender-10k.csv', import.meta.url));

/**
 * The whole story on the embedded default, in a fresh data dir: an account and a webhook, a gender
 * job over a fixture with duplicates and invalid rows, its signed `bulk.completed` received and
 * verified, the `found` result fetched through the event's presigned URL, and the same file again
 * to show that repeats cost nothing.
 */
export async function demoCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommand(args, { 'data-dir': { type: 'string' }, file: { type: 'string' } }, 0);
  const dataDir = (values['data-dir'] as string | undefined) ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-demo-'));
  const file = (values.file as string | undefined) ?? fixtureFile();
  // The demo's receiver is on loopback, which only this development setting lets a webhook use.
  const config = loadConfig({ ...process.env, SLUICE_DATA_DIR: dataDir, SLUICE_S3_ENDPOINT: '', SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
  const engine = await openEngine(config, createLogger(config.logLevel));
  const say = (text: string) => io.stdout.write(`${text}\n`);
  try {
    say(`data dir: ${dataDir} (embedded S3 server and SQLite live here)\n`);
    const account = await engine.deps.billing.createAccount({ email: 'demo@example.com', credits: 20_000, now: Date.now() });
    say(`1. created account ${account.id} with ${account.credits} credits\n`);

    const receiver = await startDemoReceiver();
    try {
      const url = await checkWebhookUrl(receiver.url, engine.webhooks.policy);
      const { webhook, secret } = await engine.webhooks.store.create({
        accountId: account.id, kind: WEBHOOK_KINDS.generic, url: url.href, events: [WEBHOOK_EVENTS.bulkCompleted], description: 'demo', isActive: true, now: Date.now(),
      });
      say(`2. registered webhook ${webhook.id} for bulk.completed at ${url.href}`);
      say('   (a loopback receiver is allowed here by SLUICE_WEBHOOK_ALLOW_PRIVATE=true; a server leaves it off)\n');

      say(`3. gender job over ${path.relative(process.cwd(), file)}, with download_link=true`);
      const first = await runJob(engine, { file, type: 'gender', accountId: account.id, downloadLink: true, outDir: path.join(dataDir, 'first'), progress: io.stderr });
      say(formatJob(first.summary));
      if (first.exitCode !== 0) return first.exitCode;

      say('4. the same file again for the same account:');
      const second = await runJob(engine, { file, type: 'gender', accountId: account.id, outDir: path.join(dataDir, 'second'), progress: io.stderr });
      say(formatJob(second.summary));
      const repeat = await parseCsv(fs.readFileSync(second.files.all!, 'utf8'));
      const column = (name: string) => repeat[0]!.indexOf(name);
      const cachedRows = repeat.filter((r) => r[column('status')] === 'ok' && r[column('cached')] === 'true' && r[column('credits')] === '0').length;
      const balance = (await engine.deps.billing.requireAccount(account.id)).credits;
      say(`   repeat run: ${second.summary.credits_used} credits, ${cachedRows} rows answered from cache; balance now ${balance}\n`);
      if (second.summary.credits_used !== 0) return 1;

      say('5. the first job\'s bulk.completed, delivered by the webhook sender to the receiver above:');
      const sender = webhookSender(engine.webhooks, engine.deps.clock, engine.deps.log, { pollMs: 100 });
      const sending = sender.run();
      // Both jobs end with an event; they may arrive in either order. Each is checked.
      let payload: DemoEvent | undefined;
      try {
        while (payload?.data.id !== first.summary.id) {
          const event = await withinSeconds(30, receiver.next());
          const problems = verifySignatures(event.body, event.headers, secret!, Date.now());
          payload = JSON.parse(event.body.toString('utf8')) as DemoEvent;
          say(`   ${payload.event} for ${payload.data.id}, webhook-id ${event.headers['webhook-id']}`);
          say(`     X-Sluice-Signature and Standard Webhooks signature over the raw body: ${problems.length === 0 ? 'both valid' : problems.join('; ')}`);
          if (problems.length > 0) return 1;
        }
      } finally {
        sender.stop();
        await sending;
      }

      const found = payload.data.downloads.found!;
      say('   the found rows through the event\'s download URL, fetched with plain HTTP and no credentials:');
      const response = await fetch(found.download_url);
      const body = await response.text();
      const rows = await parseCsv(body);
      say(`   GET ${found.download_url.split('?')[0]}?X-Amz-... -> HTTP ${response.status}, ${rows.length - 1} rows, expires ${found.expires_at}`);
      for (const row of rows.slice(0, 4)) say(`   ${csvLine(row).trimEnd()}`);
      const local = fs.readFileSync(first.files.found!, 'utf8');
      say(`   same bytes as ${path.relative(process.cwd(), first.files.found!)}: ${local === body ? 'yes' : 'NO'}`);
      say(`\nresults: ${path.dirname(first.files.all!)} and ${path.dirname(second.files.all!)}`);
      return response.status === 200 && local === body ? 0 : 1;
    } finally {
      await receiver.close();
    }
  } finally {
    await engine.close();
  }
}

interface DemoEvent {
  event: string;
  data: { id: string; downloads: Record<string, { download_url: string; expires_at: string }> };
}

async function withinSeconds<T>(seconds: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new AppError(ERROR_CODES.internal, `no webhook delivery within ${seconds} s`)), seconds * 1000);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

async function parseCsv(text: string): Promise<string[][]> {
  const rows: string[][] = [];
  for await (const batch of readCsvRows(Readable.from([Buffer.from(text)]), { maxLineBytes: 1 << 20 })) rows.push(...batch);
  return rows;
}

function fixtureFile(): string {
  if (fs.existsSync(FIXTURE)) return FIXTURE;
  // Running from the source tree (no dist/ in the path): the fixture is two levels up.
  return fileURLToPath(new URL('../../fixtures/gender-10k.csv', import.meta.url));
}
