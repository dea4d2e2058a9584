/**
 * The crash test's verdict: both runs' result bytes, charges and counters side by side, and the
 * row ids of each result checked against its input. Apart from the runner so that what counts as
 * a pass can be read without the process juggling around it.
 */
import fs from 'node:fs';
import { loadConfig } from '../src/config/load-config.js';
import { readCsvRows } from '../src/jobs/csv-reader.js';
import { openEngine } from '../src/main/open-engine.js';
import { silentLogger } from '../src/shared/logger.js';

/** What a run leaves behind for one job: its status and counters, result bytes and charges. */
export interface Facts { status: string; counters: string; files: { all: Buffer; found: Buffer }; keys: string[]; lines: number; deltas: string; charged: number; balance: number }

/** Read by an engine in this process once every worker has exited; `env` is the workers' own. */
export async function collect(env: NodeJS.ProcessEnv, jobs: readonly { id: string; accountId: string }[]): Promise<Facts[]> {
  const engine = await openEngine(loadConfig(env), silentLogger());
  try {
    const facts: Facts[] = [];
    for (const { id, accountId } of jobs) {
      const job = await engine.jobService.get(id);
      const files = { all: Buffer.alloc(0), found: Buffer.alloc(0) };
      if (job.status === 'completed') {
        for (const filter of ['all', 'found'] as const) files[filter] = Buffer.concat(await (await engine.jobService.openResult(id, filter)).toArray());
      }
      const lines = (await engine.deps.billing.ledger(accountId)).filter((l) => l.reason === 'charge' && l.jobId === id);
      facts.push({
        status: job.status,
        counters: `${job.processedRows} processed, ${job.foundRows} found, ${job.invalidRows} invalid, ${job.duplicateRows} duplicate, ${job.errorRows} error, ${job.creditsUsed} credits`,
        files,
        keys: await engine.deps.billing.chargedKeys(accountId, id),
        lines: lines.length,
        deltas: lines.map((l) => l.delta).sort((a, b) => a - b).join(','),
        charged: -lines.reduce((sum, l) => sum + l.delta, 0),
        balance: (await engine.deps.billing.requireAccount(accountId)).credits,
      });
    }
    return facts;
  } finally {
    await engine.close();
  }
}

export async function compare(inputs: string[], expected: Facts[], actual: Facts[], problems: string[]) {
  const out = { resultsIdentical: true, ledgerIdentical: true, rowsLost: 0, rowsDoubled: 0, chargesDoubled: 0 };
  for (const [i, want] of expected.entries()) {
    const got = actual[i]!;
    const name = i === 0 ? 'big job' : `side job ${i}`;
    for (const filter of ['all', 'found'] as const) {
      if (got.files[filter].equals(want.files[filter])) continue;
      out.resultsIdentical = false;
      problems.push(`${name}: ${filter}.csv differs from the clean run's ${firstDifference(got.files[filter], want.files[filter])}`);
    }
    // Row ids (the input's first column), counted against the input itself rather than the clean
    // run: a row missing from both runs is lost all the same.
    const inputIds = await rowIds(fs.readFileSync(inputs[i]!));
    for (const [run, facts] of [['clean run', want], ['run under kills', got]] as const) {
      const { lost, doubled } = await rowCheck(inputIds, facts.files.all);
      if (lost + doubled > 0) problems.push(`${name}, ${run}: ${lost} input rows missing from all.csv, ${doubled} there twice`);
      if (facts === got) [out.rowsLost, out.rowsDoubled] = [out.rowsLost + lost, out.rowsDoubled + doubled];
    }
    out.chargesDoubled += got.charged - got.keys.length;
    const ledger = (f: Facts) => `${f.lines} charge lines (${f.charged} credits), ${f.keys.length} keys charged, balance ${f.balance}`;
    if (got.status !== 'completed') problems.push(`${name} ended ${got.status}`);
    if (got.counters !== want.counters) problems.push(`${name}: counters ${got.counters}; clean run: ${want.counters}`);
    if (ledger(got) !== ledger(want) || got.deltas !== want.deltas || got.keys.join('\n') !== want.keys.join('\n')) {
      out.ledgerIdentical = false;
      problems.push(`${name}: ledger ${ledger(got)}; clean run: ${ledger(want)}${got.keys.join('\n') === want.keys.join('\n') ? '' : ' (other keys)'}`);
    }
  }
  if (out.chargesDoubled > 0) problems.push(`${out.chargesDoubled} credits charged beyond the keys paid for`);
  return out;
}

async function rowCheck(inputIds: string[], all: Buffer): Promise<{ lost: number; doubled: number }> {
  const ids = await rowIds(all);
  const distinct = new Set(ids);
  return { lost: inputIds.filter((id) => !distinct.has(id)).length, doubled: ids.length - distinct.size };
}

async function rowIds(csv: Buffer): Promise<string[]> {
  // A job that did not complete has no result file: all its rows count as lost, beside its status.
  if (csv.length === 0) return [];
  const ids: string[] = [];
  for await (const batch of readCsvRows((async function* () { yield csv; })(), { maxLineBytes: 1 << 20 })) for (const row of batch) ids.push(row[0] ?? '');
  return ids.slice(1);
}

function firstDifference(a: Buffer, b: Buffer): string {
  let i = 0;
  while (i < a.length && a[i] === b[i]) i++;
  return `from byte ${i}, line ${a.subarray(0, i).toString('utf8').split('\n').length} (${a.length} bytes against ${b.length})`;
}
