/**
 * The `validity` bench (issue 26): a bulk validity job through the real engine against the loopback
 * mail simulator (bench/mail-simulator.ts, its own process), with stated latencies.
 *
 *   npm run build && node dist/bench/scenario-validity.js [--rows 100000] [--domains 2000] [--hosts 20]
 *        [--host-concurrency 4] [--dns-ms 2] [--smtp-ms 20] [--out bench/RESULTS.md]
 *
 * Figures: rows/s against the Little's-law bound of the settings (hosts x sessions per host in
 * flight, each address costing at least one RCPT round trip of smtp-ms: bound = hosts x c / smtp-ms;
 * banners, MAIL FROM and catch-all probes are overhead the bound leaves out, so it is an upper
 * bound), SMTP sessions per address, and the engine process's peak RSS.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { runJob } from '../src/cli/run-command.js';
import { loadConfig } from '../src/config/load-config.js';
import { openEngine } from '../src/main/open-engine.js';
import { silentLogger } from '../src/shared/logger.js';

const { values } = parseArgs({
  options: {
    rows: { type: 'string', default: '100000' },
    domains: { type: 'string', default: '2000' },
    hosts: { type: 'string', default: '20' },
    'host-concurrency': { type: 'string', default: '4' },
    // Chunks in work (SLUICE_WORKER_CONCURRENCY); default: as many as a host's sessions.
    workers: { type: 'string' },
    // Rows per chunk (SLUICE_CHUNK_ROWS); default: the engine's.
    'chunk-rows': { type: 'string' },
    'dns-ms': { type: 'string', default: '2' },
    'smtp-ms': { type: 'string', default: '20' },
    out: { type: 'string' },
  },
});
const rows = Number(values.rows);
const domains = Number(values.domains);
// As many chunks in work as sessions a host may have, by default: each batch spreads over every host.
const workers = Number(values.workers ?? values['host-concurrency']);
const hosts = Number(values.hosts);
const perHost = Number(values['host-concurrency']);
const smtpMs = Number(values['smtp-ms']);
const dnsMs = Number(values['dns-ms']);

const here = path.dirname(new URL(import.meta.url).pathname);
const simulator = spawn(process.execPath, [path.join(here, 'mail-simulator.js'), '--hosts', String(hosts), '--dns-ms', String(dnsMs), '--smtp-ms', String(smtpMs)], { stdio: ['pipe', 'pipe', 'inherit'] });
const lines = readline.createInterface({ input: simulator.stdout! });
const next = (): Promise<string> => new Promise((resolve) => lines.once('line', resolve));
const ready = JSON.parse(await next()) as { dns: string; smtpPort: number };

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-validity-bench-'));
try {
  // Addresses spread over the domains at random (a seeded LCG: the same file every run); 1 in 10 unknown.
  let seed = 42;
  const random = (): number => (seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31) / 2 ** 31;
  const input = path.join(dir, 'in.csv');
  const out = fs.createWriteStream(input);
  out.write('email\n');
  for (let i = 0; i < rows; i++) out.write(`${i % 10 === 9 ? 'x' : 'u'}${i}@d${Math.floor(random() * domains)}.bench\n`);
  await new Promise<void>((resolve) => out.end(resolve));

  const env = {
    SLUICE_DATA_DIR: path.join(dir, 'data'),
    SLUICE_DNS_SERVERS: ready.dns,
    SLUICE_SMTP_PORT: String(ready.smtpPort),
    SLUICE_SMTP_ALLOW_PRIVATE: 'true',
    SLUICE_SMTP_HELO: 'bench.sluice.test',
    SLUICE_SMTP_HOST_CONCURRENCY: String(perHost),
    SLUICE_WORKER_CONCURRENCY: String(workers),
    // Chunks of the engine's default size unless told: every chunk boundary is a pause in a
    // worker's lookups (the chunk's part files written, the next chunk claimed and read).
    ...(values['chunk-rows'] === undefined ? {} : { SLUICE_CHUNK_ROWS: values['chunk-rows'] }),
  };
  const engine = await openEngine(loadConfig(env), silentLogger());
  const account = await engine.deps.billing.createAccount({ id: 'bench', credits: rows * 2, now: Date.now() });
  const started = performance.now();
  const startedAt = Date.now();
  const elu = performance.eventLoopUtilization();
  const cpu = process.cpuUsage();
  const run = await runJob(engine, { file: input, type: 'validity', accountId: account.id, outDir: path.join(dir, 'out') });
  const seconds = (performance.now() - started) / 1000;
  const loopBusy = performance.eventLoopUtilization(elu).utilization;
  const cpuUsed = process.cpuUsage(cpu);
  const rss = process.resourceUsage().maxRSS * 1024;
  simulator.stdin!.write('stats\n');
  const stats = JSON.parse(await next()) as { dnsQueries: number; sessions: number; rcpts: number; data: number; peakPerHost: number; sessionMs: number; clientMs: number; firstMs: number; lastMs: number };
  await engine.close();

  const rate = rows / seconds;
  const bound = (hosts * perHost) / (smtpMs / 1000);
  const result = {
    date: new Date().toISOString(),
    machine: `${os.cpus()[0]?.model ?? 'cpu'}, ${os.cpus().length} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.platform()} ${os.release()}`,
    load: os.loadavg().map((l) => l.toFixed(2)).join(', '),
    rows,
    domains,
    hosts,
    perHost,
    workers,
    dnsMs,
    smtpMs,
    status: run.summary.status,
    seconds: Number(seconds.toFixed(2)),
    rowsPerSecond: Math.round(rate),
    bound: Math.round(bound),
    efficiency: Number((rate / bound).toFixed(3)),
    sessionsPerAddress: Number((stats.sessions / rows).toFixed(4)),
    rcptsPerAddress: Number((stats.rcpts / rows).toFixed(3)),
    peakSessionsPerHost: stats.peakPerHost,
    // The host slots' use between the first session and the last (1.0: every slot always open), and
    // what each RCPT's round trip waited on the verifier beyond the server's smtpMs.
    slotUse: Number((stats.sessionMs / (hosts * perHost * (stats.lastMs - stats.firstMs))).toFixed(3)),
    sessionSpanSeconds: Number(((stats.lastMs - stats.firstMs) / 1000).toFixed(2)),
    // Before the first session (upload, split, the first DNS answers) and after the last (the
    // last checkpoints, the result files).
    beforeSessionsSeconds: Number(((stats.firstMs - startedAt) / 1000).toFixed(2)),
    afterSessionsSeconds: Number(((startedAt + seconds * 1000 - stats.lastMs) / 1000).toFixed(2)),
    // The engine's event loop busy share and CPU seconds over the job: a busy loop delays every
    // session's next command.
    eventLoopUse: Number(loopBusy.toFixed(3)),
    engineCpuSeconds: Number(((cpuUsed.user + cpuUsed.system) / 1e6).toFixed(2)),
    clientMsPerCommand: Number((stats.clientMs / (stats.rcpts + stats.sessions)).toFixed(2)),
    dnsQueries: stats.dnsQueries,
    dataCommands: stats.data,
    peakRssMb: Math.round(rss / 2 ** 20),
    credits: run.summary.credits_used,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
  if (values.out) fs.appendFileSync(values.out, `${JSON.stringify(result)}\n`);
} finally {
  simulator.stdin!.end();
  fs.rmSync(dir, { recursive: true, force: true });
}
