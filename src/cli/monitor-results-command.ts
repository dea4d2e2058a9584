import fs from 'node:fs';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { Engine } from '../jobs/engine.js';
import { monitorServiceOf } from '../monitors/monitor-service.js';
import { resultCsv } from '../monitors/result-csv.js';
import { snapshotView, typedRunView } from '../monitors/result-views.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { runNotFound } from '../storage/monitor-result-records.js';
import { parseCommand, positiveInt, printJson, type CliIo } from './cli-io.js';

function accountOf(values: Record<string, unknown>): string {
  const id = values.account as string | undefined;
  if (!id) throw new AppError(ERROR_CODES.badArgument, '--account is required');
  return id;
}

function pageOf(values: Record<string, unknown>): { limit: number; offset: number } {
  return {
    limit: Math.min(positiveInt(values.limit as string | undefined, '--limit', 20), 1000),
    offset: positiveInt(values.offset as string | undefined, '--offset', 0),
  };
}

const PAGE_OPTIONS = { account: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } } as const;

/** `sluice monitors runs ID`: the monitor's runs, newest first, as `GET /api/agent/monitors/{id}/runs`. */
export async function runsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, PAGE_OPTIONS, 1);
  const accountId = accountOf(values);
  const monitor = await monitorServiceOf(engine.deps).get(accountId, positionals[0]!);
  const page = pageOf(values);
  const { runs, total } = await engine.deps.store.monitors.runs(accountId, monitor.id, page);
  const views = runs.map((r) => typedRunView({ ...r, type: monitor.type }));
  if (values.json) printJson(io, { runs: views, total, ...page });
  else {
    for (const r of views) {
      const s = r.stats;
      io.stdout.write(`${r.id}  ${r.status.padEnd(9)} ${r.trigger.padEnd(8)} ${r.created_at}  records ${s.total_records ?? '-'}  changes ${s.changes_detected ?? '-'}  credits ${s.credits_used ?? '-'}  ${s.duration_ms === null ? '-' : `${s.duration_ms} ms`}\n`);
    }
    io.stdout.write(`${views.length} of ${total} runs\n`);
  }
  return 0;
}

/**
 * `sluice monitors results RUN_ID`: a page of the run's snapshots, as the agent results list; with
 * `--csv FILE`, every snapshot written to FILE as the download endpoint writes it, streamed.
 */
export async function resultsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { ...PAGE_OPTIONS, 'changes-only': { type: 'boolean', default: false }, csv: { type: 'string' } }, 1);
  const accountId = accountOf(values);
  const store = engine.deps.store;
  const run = await store.monitorResults.run(accountId, positionals[0]!);
  if (!run) throw runNotFound();
  const changesOnly = values['changes-only'] as boolean;
  const file = values.csv as string | undefined;
  if (file !== undefined) {
    const monitor = await monitorServiceOf(engine.deps).get(accountId, run.monitorId);
    const pages = store.monitorResults.streamSnapshots(accountId, run.id, { changesOnly });
    await pipeline(Readable.from(resultCsv(monitor.trackedFields, pages)), fs.createWriteStream(file));
    if (values.json) printJson(io, { run_id: run.id, file, changes_only: changesOnly });
    else io.stdout.write(`results of run ${run.id}${changesOnly ? ' (changes only)' : ''} written to ${file}\n`);
    return 0;
  }
  const page = pageOf(values);
  const { snapshots, total } = await store.monitorResults.snapshots(accountId, run.id, { ...page, changesOnly });
  const views = snapshots.map((s) => snapshotView(run.type, s));
  if (values.json) printJson(io, { results: views, total, ...page });
  else {
    for (const s of views) io.stdout.write(`${s.target}  ${s.has_changes ? 'changed' : '-      '}  ${s.changes === null ? '' : JSON.stringify(s.changes)}\n`);
    io.stdout.write(`${views.length} of ${total} results${changesOnly ? ' with changes' : ''}\n`);
  }
  return 0;
}
