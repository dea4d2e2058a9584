import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../config/load-config.js';
import { readCsvRows } from '../jobs/csv-reader.js';
import { csvLine } from '../jobs/csv-writer.js';
import { openEngine } from './open-engine.js';
import { createLogger } from '../shared/logger.js';
import { parseCommand, type CliIo } from '../cli/cli-io.js';
import { formatJob } from '../cli/format-job.js';
import { runJob } from '../cli/run-command.js';

export const DEMO_USAGE = 'sluice demo [--data-dir DIR] [--file CSV]';

const FIXTURE = fileURLToPath(new URL('../../../fixtures/gender-10k.csv', import.meta.url));

/**
 * The whole story on the embedded default, in a fresh data dir: an account, a gender job over a
 * fixture with duplicates and invalid rows, the `found` result fetched over HTTP through its
 * presigned URL, and the same file again to show that repeats cost nothing.
 */
export async function demoCommand(args: string[], io: CliIo): Promise<number> {
  const { values } = parseCommand(args, { 'data-dir': { type: 'string' }, file: { type: 'string' } }, 0);
  const dataDir = (values['data-dir'] as string | undefined) ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-demo-'));
  const file = (values.file as string | undefined) ?? fixtureFile();
  const config = loadConfig({ ...process.env, SLUICE_DATA_DIR: dataDir, SLUICE_S3_ENDPOINT: '' });
  const engine = await openEngine(config, createLogger(config.logLevel));
  const say = (text: string) => io.stdout.write(`${text}\n`);
  try {
    say(`data dir: ${dataDir} (embedded S3 server and SQLite live here)\n`);
    const account = engine.deps.billing.createAccount({ email: 'demo@example.com', credits: 20_000, now: Date.now() });
    say(`1. created account ${account.id} with ${account.credits} credits\n`);

    say(`2. gender job over ${path.relative(process.cwd(), file)}`);
    const first = await runJob(engine, { file, type: 'gender', accountId: account.id, outDir: path.join(dataDir, 'first'), progress: io.stderr });
    say(formatJob(first.summary));
    if (first.exitCode !== 0) return first.exitCode;

    say('3. the found rows through a presigned URL, fetched with plain HTTP and no credentials:');
    const url = await engine.jobService.downloadUrl(first.summary.id, 'found', config.presignExpiresSeconds);
    const response = await fetch(url.url);
    const body = await response.text();
    const rows = await parseCsv(body);
    say(`   GET ${url.url.split('?')[0]}?X-Amz-... -> HTTP ${response.status}, ${rows.length - 1} rows, expires ${url.expiresAt.toISOString()}`);
    for (const row of rows.slice(0, 4)) say(`   ${csvLine(row).trimEnd()}`);
    const local = fs.readFileSync(first.files.found!, 'utf8');
    say(`   same bytes as ${path.relative(process.cwd(), first.files.found!)}: ${local === body ? 'yes' : 'NO'}\n`);
    if (response.status !== 200 || local !== body) return 1;

    say('4. the same file again for the same account:');
    const second = await runJob(engine, { file, type: 'gender', accountId: account.id, outDir: path.join(dataDir, 'second'), progress: io.stderr });
    say(formatJob(second.summary));
    const repeat = await parseCsv(fs.readFileSync(second.files.all!, 'utf8'));
    const column = (name: string) => repeat[0]!.indexOf(name);
    const cachedRows = repeat.filter((r) => r[column('status')] === 'ok' && r[column('cached')] === 'true' && r[column('credits')] === '0').length;
    const balance = engine.deps.billing.requireAccount(account.id).credits;
    say(`   repeat run: ${second.summary.credits_used} credits, ${cachedRows} rows answered from cache; balance now ${balance}`);
    say(`\nresults: ${path.dirname(first.files.all!)} and ${path.dirname(second.files.all!)}`);
    return second.summary.credits_used === 0 ? 0 : 1;
  } finally {
    await engine.close();
  }
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
