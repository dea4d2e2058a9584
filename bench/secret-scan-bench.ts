// Exposed-credential scan bench (issue #30): 256 KB of mixed text holding one true positive of
// every gitleaks rule, scanned again and again (p50, p99 per scan; target p99 < 100 ms on one
// core), and a 5,000-commit repository walked commit by commit through the engines (commits/s).
//   npm run build && node dist/bench/secret-scan-bench.js [--runs 50] [--commits 5000]
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { NO_VALIDATION } from '../src/lookups/secrets/credential-validator.js';
import { SecretFingerprints } from '../src/lookups/secrets/fingerprint.js';
import { commitChanges } from '../src/lookups/secrets/git-history.js';
import { GITLEAKS_RULES } from '../src/lookups/secrets/rule-set.js';
import { ScanRunner } from '../src/lookups/secrets/scan-runner.js';
import { SecretScanner } from '../src/lookups/secrets/secret-scanner.js';
import type { SecretEngine } from '../src/lookups/secrets/secret-types.js';

const { values } = parseArgs({
  options: { runs: { type: 'string', default: '50' }, commits: { type: 'string', default: '5000' }, 'both-commits': { type: 'string', default: '500' } },
});
const RUNS = Number(values.runs);
const COMMITS = Number(values.commits);
/** secretlint costs far more a call than the standard engine: the type 2 walk stops after this many commits. */
const BOTH_COMMITS = Number(values['both-commits']);
const ROOT = path.resolve(import.meta.dirname, '..', '..');
const TARGET_BYTES = 256 * 1024;

const FILLER = [
  'function total(items) { return items.reduce((sum, item) => sum + item.price * item.quantity, 0); }',
  'The deployment notes say the service restarts nightly; logs rotate at 100 MB and keep 7 days.',
  '  - name: build\n    run: npm ci && npm test',
  'SELECT id, email, created_at FROM accounts WHERE status = \'active\' ORDER BY created_at DESC LIMIT 50;',
  'const retries = Number(process.env.RETRIES ?? 3); // keep it small: each retry doubles the wait',
  '<div class="card"><h2>Settings</h2><p>Change your password from the account page.</p></div>',
];

function mixedText(): { text: string; rules: number } {
  const examples = JSON.parse(fs.readFileSync(path.join(ROOT, 'test/fixtures/secrets/gitleaks-examples.json'), 'utf8')).rules as Record<string, { positives: string[] }>;
  const parts: string[] = [];
  let rules = 0;
  for (const rule of GITLEAKS_RULES.rules) {
    const p = examples[rule.id]?.positives[0];
    if (p) {
      parts.push(p);
      rules++;
    }
  }
  const secrets = parts.join('\n');
  const lines: string[] = [];
  let size = Buffer.byteLength(secrets);
  for (let i = 0; size < TARGET_BYTES; i++) {
    const line = FILLER[i % FILLER.length]!;
    lines.push(line);
    size += Buffer.byteLength(line) + 1;
  }
  // Secrets spread through the filler, as in a real paste.
  const every = Math.max(1, Math.floor(lines.length / parts.length));
  const out: string[] = [];
  for (let i = 0, s = 0; i < lines.length; i++) {
    out.push(lines[i]!);
    if (i % every === 0 && s < parts.length) out.push(parts[s++]!);
  }
  let text = out.join('\n');
  while (Buffer.byteLength(text) > TARGET_BYTES) text = text.slice(0, text.lastIndexOf('\n'));
  return { text, rules };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

/**
 * CPU time of the whole process (all threads), in ms, from /proc: while a scan runs the main thread
 * only waits, so the difference over many scans is the scan thread's CPU time, which other work on
 * a shared machine inflates far less than wall time. Linux counts it in 10 ms ticks.
 */
function processCpuMs(): number {
  const fields = fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function textBench(scanner: SecretScanner, engines: SecretEngine[], text: string): Promise<{ p50: number; p99: number; max: number; cpuMean: number; findings: number }> {
  for (let i = 0; i < 3; i++) await scanner.findAll(text, null, engines, null);
  const times: number[] = [];
  let findings = 0;
  const cpu = processCpuMs();
  for (let i = 0; i < RUNS; i++) {
    const t = performance.now();
    findings = (await scanner.findAll(text, null, engines, null)).length;
    times.push(performance.now() - t);
  }
  const cpuMean = (processCpuMs() - cpu) / RUNS;
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), max: times[times.length - 1]!, cpuMean, findings };
}

/** A repository of `n` commits made with git fast-import: 3 lines per commit, a planted token every 100th. */
function bigRepository(n: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-repo-'));
  const work = path.join(dir, 'work.git');
  execFileSync('git', ['init', '--quiet', '--bare', work]);
  const chunks: string[] = [];
  const files = new Map<string, string>();
  for (let i = 1; i <= n; i++) {
    const name = `src/module${i % 50}.js`;
    let add = `export const value${i} = ${i};\nexport function f${i}(x) { return x + ${i}; }\n// change ${i}\n`;
    if (i % 100 === 0) add += `const token${i} = "ghp_${(i.toString(36) + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx').slice(0, 36)}";\n`;
    const content = (files.get(name) ?? '') + add;
    files.set(name, content);
    const message = `commit ${i}\n`;
    const when = 1_767_225_600 + i * 60;
    chunks.push(
      `commit refs/heads/main\nmark :${i}\nauthor Bench <bench@example.com> ${when} +0000\ncommitter Bench <bench@example.com> ${when} +0000\ndata ${Buffer.byteLength(message)}\n${message}`,
      i > 1 ? `from :${i - 1}\n` : '',
      `M 100644 inline ${name}\ndata ${Buffer.byteLength(content)}\n${content}\n`,
    );
  }
  const r = spawnSync('git', ['--git-dir', work, 'fast-import', '--quiet'], { input: chunks.join('') });
  if (r.status !== 0) throw new Error(`fast-import failed: ${r.stderr}`);
  return work;
}

async function repoBench(scanner: SecretScanner, engines: SecretEngine[], dir: string, limit: number): Promise<{ commits: number; seconds: number; findings: number }> {
  const t = performance.now();
  let commits = 0;
  let findings = 0;
  for await (const commit of commitChanges(dir)) {
    if (commits === limit) break;
    commits++;
    for (const file of commit.files) {
      if (file.added.length > 0) findings += (await scanner.findAll(file.added.join('\n'), file.path, engines, null)).length;
    }
  }
  return { commits, seconds: (performance.now() - t) / 1000, findings };
}

async function main(): Promise<void> {
  const runner = new ScanRunner(GITLEAKS_RULES, { threads: 1, budgetMs: 60_000 });
  const scanner = new SecretScanner(runner, new SecretFingerprints(Buffer.alloc(32, 7)), NO_VALIDATION);
  const { text, rules } = mixedText();
  console.log(`load average at start: ${os.loadavg().map((l) => l.toFixed(2)).join(', ')}; ${os.cpus().length} cores, ${os.cpus()[0]?.model}; node ${process.version}`);
  console.log(`text: ${Buffer.byteLength(text)} bytes, one true positive of each of ${rules} rules, ${RUNS} runs`);
  const standard = await textBench(scanner, ['gitleaks'], text);
  console.log(`type 0 (gitleaks rules): p50 ${standard.p50.toFixed(1)} ms, p99 ${standard.p99.toFixed(1)} ms, max ${standard.max.toFixed(1)} ms, CPU ${standard.cpuMean.toFixed(1)} ms a scan (mean), ${standard.findings} findings`);
  const both = await textBench(scanner, ['gitleaks', 'secretlint'], text);
  console.log(`type 2 (both engines): p50 ${both.p50.toFixed(1)} ms, p99 ${both.p99.toFixed(1)} ms, max ${both.max.toFixed(1)} ms, CPU ${both.cpuMean.toFixed(1)} ms a scan (mean), ${both.findings} findings`);
  const t = performance.now();
  const repo = bigRepository(COMMITS);
  console.log(`repository: ${COMMITS} commits made in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  for (const engines of [['gitleaks'], ['gitleaks', 'secretlint']] as SecretEngine[][]) {
    const r = await repoBench(scanner, engines, repo, engines.length > 1 ? BOTH_COMMITS : COMMITS);
    console.log(`history walk ${engines.join('+')}: ${r.commits} commits in ${r.seconds.toFixed(1)} s, ${(r.commits / r.seconds).toFixed(0)} commits/s, ${r.findings} raw findings`);
  }
  fs.rmSync(path.dirname(repo), { recursive: true, force: true });
  await runner.close();
}

await main();
