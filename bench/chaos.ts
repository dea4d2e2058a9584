/**
 * `npm run chaos`: the crash test at full size (bench/chaos-run.ts says what it does).
 *
 *   node dist/bench/chaos.js [--rows 200000] [--kills 20] [--seed N] [--chunks 50] [--workers 2]
 *                            [--side-jobs 3] [--delivery-kills 2] [--machines N [--database-url URL]]
 *
 * `--machines N` (2 or more) runs the jobs under kills on N worker machines that share only
 * PostgreSQL and one S3 endpoint, against the same reference (`--workers` processes on one data
 * dir's SQLite, never killed). The database is a new one on the server of `--database-url` (else
 * SLUICE_TEST_DATABASE_URL), dropped at the end; with neither, on a PostgreSQL server started from
 * the bundled binaries and stopped at the end.
 *
 * Prints the seed first, so that a failing run can be repeated (kill moments also depend on timing),
 * then a table of what happened and what was checked. Exits 1 when any check failed, 2 on bad flags.
 */
import { parseArgs } from 'node:util';
import { chaosDatabase, type ChaosDatabase } from './chaos-machines.js';
import { runChaos, type ChaosReport } from './chaos-run.js';

function wholeNumber(name: string, raw: string, min: number): number {
  if (!/^\d+$/.test(raw) || Number(raw) < min) throw new Error(`--${name} must be a whole number of at least ${min}, got "${raw}"`);
  return Number(raw);
}

function table(r: ChaosReport): string {
  const yes = (ok: boolean) => (ok ? 'yes' : 'NO');
  const phases = Object.entries(r.phases).map(([phase, n]) => `${phase} ${n}`).join(', ') || 'none';
  const rows: [string, string][] = [
    ['seed', String(r.seed)],
    ['run under kills', r.setup],
    ['rows (big job)', `${r.rows.toLocaleString('en-US')} (chunks of ${r.chunkRows}, batches of ${r.batchRows})`],
    ['kills of a lease holder before completion', String(r.kills)],
    ['phases hit', phases],
    ['SIGKILLs sent in all', `${r.killsSent} (${r.killsSent - r.kills} not counted: no lease held, or the big job already done)`],
    ['senders killed during a webhook attempt', String(r.deliveryKills)],
    ['restarts', r.machines !== undefined ? `${r.restarts} (by machine: ${r.restartsByMachine.join(', ')})` : String(r.restarts)],
    ['wall time, clean run', `${(r.cleanMs / 1000).toFixed(1)} s`],
    ['wall time, run under kills (to last delivery)', `${(r.chaosMs / 1000).toFixed(1)} s`],
    ['jobs at the end', Object.entries(r.statuses).map(([s, n]) => `${n} ${s}`).join(', ')],
    ['rows lost / doubled', `${r.rowsLost} / ${r.rowsDoubled}`],
    ['charges doubled', String(r.chargesDoubled)],
    ['result files identical to the clean run', yes(r.resultsIdentical)],
    ['ledger identical to the clean run', yes(r.ledgerIdentical)],
    ['webhook events / deliveries received / distinct webhook-ids', `${r.events} / ${r.deliveries} / ${r.distinctIds}`],
    ['passed', yes(r.problems.length === 0)],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  return rows.map(([k, v]) => `${k.padEnd(width)}  ${v}`).join('\n');
}

async function main(): Promise<number> {
  // As in the sluice command: the SDK's notice about its future Node 22 floor is noise here.
  process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
  const { values } = parseArgs({
    options: {
      rows: { type: 'string', default: '200000' },
      kills: { type: 'string', default: '20' },
      seed: { type: 'string' },
      chunks: { type: 'string', default: '50' },
      workers: { type: 'string', default: '2' },
      'side-jobs': { type: 'string', default: '3' },
      'delivery-kills': { type: 'string', default: '2' },
      machines: { type: 'string' },
      'database-url': { type: 'string' },
    },
  });
  let options;
  try {
    options = {
      rows: wholeNumber('rows', values.rows, 1000),
      kills: wholeNumber('kills', values.kills, 1),
      seed: values.seed === undefined ? Math.floor(Math.random() * 2 ** 31) : wholeNumber('seed', values.seed, 0),
      chunks: wholeNumber('chunks', values.chunks, 1),
      workers: wholeNumber('workers', values.workers, 1),
      sideJobs: wholeNumber('side-jobs', values['side-jobs'], 0),
      deliveryKills: wholeNumber('delivery-kills', values['delivery-kills'], 0),
      ...(values.machines === undefined ? {} : { machines: wholeNumber('machines', values.machines, 2) }),
    };
    if (values['database-url'] !== undefined && options.machines === undefined) throw new Error('--database-url goes with --machines');
  } catch (e: unknown) {
    process.stderr.write(`chaos: ${e instanceof Error ? e.message : String(e)}\n`);
    return 2;
  }
  process.stdout.write(`chaos: seed ${options.seed} (repeat with --seed ${options.seed})\n`);
  const log = (line: string) => process.stdout.write(`  ${line}\n`);
  let database: ChaosDatabase | undefined;
  let report: ChaosReport;
  try {
    if (options.machines !== undefined) {
      database = await chaosDatabase(values['database-url'] ?? (process.env.SLUICE_TEST_DATABASE_URL || undefined));
      log(`PostgreSQL: ${database.origin}`);
    }
    report = await runChaos({ ...options, ...(database && { databaseUrl: database.url }), log });
  } finally {
    await database?.dispose();
  }
  process.stdout.write(`\n${table(report)}\n`);
  for (const problem of report.problems) process.stdout.write(`\nFAILED: ${problem}\n`);
  return report.problems.length === 0 ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`chaos: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
