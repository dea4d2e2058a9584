/**
 * `sluice import passwords` at scale, and what a check costs afterwards:
 *
 *   npm run build && node dist/bench/password-import.js [--hashes 10000000] [--lookups 20000] [--out bench/RESULTS.md] [--keep]
 *
 * Generates a combined `SHA1:COUNT` file of N distinct hashes in ascending order (CRLF lines, as
 * HIBP's downloader writes it; seeded, so every run imports the same bytes), imports it with the
 * built CLI in a child process on a fresh data dir (wall time from spawn to exit, the importer's
 * own time, peak RSS sampled from /proc every 50 ms), and does the same for N/10 hashes to show
 * whether memory grows with the input. Then, in this process: range reads straight from the index
 * (LocalPasswordRange), and POST /api/lookup/email/password/breaches through the real app
 * (app.inject, the SQLite store, billing) for random SHA-1s, each a first lookup and so a charge.
 * Writes (or replaces) the section "Password range import" of --out.
 */
import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { buildApp } from '../src/api/build-app.js';
import { loadConfig } from '../src/config/load-config.js';
import { LocalPasswordRange } from '../src/lookups/password/local-password-range.js';
import { INDEX_DIR, INDEX_POINTER } from '../src/lookups/password/password-range-format.js';
import { apiDeps } from '../src/main/open-api.js';
import { openEngine } from '../src/main/open-engine.js';
import { silentLogger } from '../src/shared/logger.js';
import { ProcessRecords } from '../src/shared/shared-records.js';
import { CLI, REPO_ROOT } from './children.js';

const SECTION = '## Password range import (`sluice import passwords`)';

/** xorshift32: the same file on every run, and far faster than crypto for 350 million hex digits. */
function generator(seed: number) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/** N hashes spread over the 2^20 prefixes, each prefix's suffixes random and sorted, written in order. */
function generate(file: string, n: number): void {
  const next = generator(42);
  const out = fs.openSync(file, 'w');
  let batch: string[] = [];
  let written = 0;
  for (let p = 0; p < 1 << 20; p++) {
    const upto = Math.round(((p + 1) * n) / 2 ** 20);
    const prefix = p.toString(16).toUpperCase().padStart(5, '0');
    const suffixes: string[] = [];
    for (; written < upto; written++) {
      let s = (next() & 0x7).toString(16);
      for (let w = 0; w < 4; w++) s += next().toString(16).padStart(8, '0');
      s += (next() & 0xff).toString(16).padStart(2, '0');
      suffixes.push(s.toUpperCase().slice(0, 35));
    }
    suffixes.sort();
    for (let i = 0; i < suffixes.length; i++) {
      // Duplicates from the generator are astronomically unlikely; the import would count them anyway.
      batch.push(`${prefix}${suffixes[i]}:${1 + (next() % 100_000)}\r\n`);
    }
    if (batch.length >= 100_000) {
      fs.writeSync(out, batch.join(''));
      batch = [];
    }
  }
  fs.writeSync(out, batch.join(''));
  fs.closeSync(out);
}

interface ImportRun {
  wallS: number;
  importerS: number;
  peakRssMb: number;
  summary: Record<string, unknown>;
}

async function importWithCli(file: string, dataDir: string): Promise<ImportRun> {
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'import', 'passwords', file, '--json'], {
    env: { ...process.env, SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: 'warn', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (t: string) => (stdout += t));
  child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t));
  let peakKb = 0;
  const sampler = setInterval(() => {
    const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8').match(/VmRSS:\s+(\d+)/);
    if (status) peakKb = Math.max(peakKb, Number(status[1]));
  }, 50);
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  clearInterval(sampler);
  if (code !== 0) throw new Error(`import exited ${code}: ${stderr}`);
  const summary = JSON.parse(stdout) as Record<string, unknown>;
  return { wallS: (performance.now() - started) / 1000, importerS: summary.seconds as number, peakRssMb: peakKb / 1024, summary };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

function pointerRecords(dataDir: string): ProcessRecords {
  const db = new Database(path.join(dataDir, 'sluice.db'), { readonly: true });
  const value = (db.prepare('SELECT value FROM shared_records WHERE name = ?').get(INDEX_POINTER) as { value: string }).value;
  db.close();
  const records = new ProcessRecords();
  void records.updateShared(INDEX_POINTER, () => ({ value, result: undefined }));
  return records;
}

async function rangeLatencies(dataDir: string, lookups: number): Promise<{ p50: number; p99: number; rows: number }> {
  const range = new LocalPasswordRange({ dataDir, records: pointerRecords(dataDir), now: () => 0 });
  await range.range('00000');
  const ms: number[] = [];
  let rows = 0;
  for (let i = 0; i < lookups; i++) {
    const prefix = randomBytes(3).toString('hex').slice(0, 5).toUpperCase();
    const t = performance.now();
    const answer = await range.range(prefix);
    ms.push(performance.now() - t);
    if (answer.ok) rows += answer.rows.length;
  }
  await range.close();
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), rows: rows / lookups };
}

async function endpointLatencies(dataDir: string, lookups: number): Promise<{ p50: number; p99: number; charged: number }> {
  const engine = await openEngine(loadConfig({ SLUICE_DATA_DIR: dataDir, SLUICE_LOG_LEVEL: 'silent' }), silentLogger());
  try {
    const deps = apiDeps(engine);
    const app = await buildApp(deps, silentLogger());
    const account = await engine.deps.billing.createAccount({ email: 'bench@example.com', passwordHash: null, credits: lookups + 10, now: Date.now() });
    const { secret } = await deps.keys.create({ accountId: account.id, name: 'bench', role: 'admin', now: Date.now() });
    // The settings' rate limit would refuse a bench that asks thousands of times a minute.
    await engine.deps.billing.setRateLimit(account.id, 1_000_000);
    const ms: number[] = [];
    for (let i = 0; i < lookups; i++) {
      const sha1 = createHash('sha1').update(`bench password ${i}`).digest('hex');
      const t = performance.now();
      const response = await app.inject({ method: 'POST', url: '/api/lookup/email/password/breaches', headers: { authorization: `Bearer ${secret}` }, payload: { sha1 } });
      ms.push(performance.now() - t);
      if (response.statusCode !== 200) throw new Error(`lookup ${i}: ${response.statusCode} ${response.body}`);
    }
    await app.close();
    const charged = lookups + 10 - (await engine.deps.billing.requireAccount(account.id)).credits;
    ms.sort((a, b) => a - b);
    return { p50: percentile(ms, 50), p99: percentile(ms, 99), charged };
  } finally {
    await engine.close();
  }
}

function replaceSection(out: string, section: string): void {
  const text = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '';
  const at = text.indexOf(SECTION);
  if (at < 0) {
    fs.writeFileSync(out, `${text.trimEnd()}\n\n${section}`);
    return;
  }
  const nextHeading = text.indexOf('\n## ', at + SECTION.length);
  fs.writeFileSync(out, text.slice(0, at) + section + (nextHeading < 0 ? '' : text.slice(nextHeading + 1)));
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      hashes: { type: 'string', default: '10000000' },
      lookups: { type: 'string', default: '20000' },
      'endpoint-lookups': { type: 'string', default: '5000' },
      out: { type: 'string', default: path.join(REPO_ROOT, 'bench/RESULTS.md') },
      keep: { type: 'boolean', default: false },
    },
  });
  const n = Number(values.hashes);
  const lookups = Number(values.lookups);
  const endpointLookups = Number(values['endpoint-lookups']);
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-password-bench-'));
  const load = os.loadavg();
  const startedAt = new Date();
  try {
    const small = Math.round(n / 10);
    const smallFile = path.join(tmp, 'small.txt');
    generate(smallFile, small);
    const smallRun = await importWithCli(smallFile, path.join(tmp, 'small-data'));
    fs.rmSync(smallFile);
    process.stderr.write(`${small} hashes: ${JSON.stringify(smallRun)}\n`);

    const file = path.join(tmp, 'pwned.txt');
    let t = performance.now();
    generate(file, n);
    const generateS = (performance.now() - t) / 1000;
    const fileMb = fs.statSync(file).size / 1024 ** 2;
    const dataDir = path.join(tmp, 'data');
    const run = await importWithCli(file, dataDir);
    process.stderr.write(`${n} hashes: ${JSON.stringify(run)}\n`);
    const indexMb = fs.readdirSync(path.join(dataDir, INDEX_DIR)).reduce((sum, f) => sum + fs.statSync(path.join(dataDir, INDEX_DIR, f)).size, 0) / 1024 ** 2;
    t = performance.now();
    const ranges = await rangeLatencies(dataDir, lookups);
    const endpoint = await endpointLatencies(dataDir, endpointLookups);
    const cpus = os.cpus();
    const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
    const section = [
      SECTION,
      '',
      `- Date: ${startedAt.toISOString()}; machine: ${cpus[0]?.model ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB memory, ${os.platform()} ${os.release()}; Node ${process.version}`,
      `- Load average at the start: ${load.map((l) => l.toFixed(2)).join(', ')} (the machine is shared; every figure is slower for it)`,
      `- Input: ${fmt(n)} generated hashes (seeded, ascending, CRLF \`SHA1:COUNT\` lines as the HIBP downloader writes them), ${fileMb.toFixed(0)} MB, generated in ${generateS.toFixed(1)} s (not timed below); index file ${indexMb.toFixed(0)} MB`,
      `- \`node bench/password-import.js --hashes ${n} --lookups ${lookups} --endpoint-lookups ${endpointLookups}\` (after \`npm run build\`)`,
      '',
      '| figure | value | details |',
      '|---|---|---|',
      `| import rate | ${fmt(n / run.importerS)} hashes/s | ${fmt(n)} hashes in ${run.importerS.toFixed(1)} s inside the importer; ${run.wallS.toFixed(1)} s from spawning \`sluice import passwords FILE --json\` to its exit (engine start, embedded S3, migrations included); summary: imported ${fmt(run.summary.imported as number)}, duplicates ${run.summary.duplicates}, invalid ${run.summary.invalid} |`,
      `| import peak RSS | ${run.peakRssMb.toFixed(0)} MB at ${fmt(n)} hashes | ${smallRun.peakRssMb.toFixed(0)} MB at ${fmt(small)} hashes (${(run.peakRssMb / smallRun.peakRssMb).toFixed(2)}× for 10× the input; the smaller import ran at ${fmt(small / smallRun.importerS)} hashes/s); /proc VmRSS sampled every 50 ms |`,
      `| range read p50 / p99 | ${ranges.p50.toFixed(3)} ms / ${ranges.p99.toFixed(3)} ms | LocalPasswordRange.range for ${fmt(lookups)} random prefixes, one after another, the index file in the page cache after the import; ${ranges.rows.toFixed(1)} rows per range on average |`,
      `| check endpoint p50 / p99 | ${endpoint.p50.toFixed(2)} ms / ${endpoint.p99.toFixed(2)} ms | POST /api/lookup/email/password/breaches with \`sha1\`, ${fmt(endpointLookups)} distinct random SHA-1s through app.inject on the SQLite store: key check, rate limit, billing read, range read, charge commit; ${fmt(endpoint.charged)} credits charged (one per first lookup) |`,
      '',
    ].join('\n');
    replaceSection(values.out, section);
    process.stdout.write(section);
  } finally {
    if (!values.keep) fs.rmSync(tmp, { recursive: true, force: true });
  }
}

await main();
