import { jobLookups } from '../../pipelines/index.js';
import { validityPipeline } from '../../pipelines/validity.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import { readCsvRows } from '../jobs/csv-reader.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { ROW_STATUSES } from '../storage/job-states.js';
import type { JobRecord } from '../storage/job-records.js';
import type { RunClaim, SnapshotWrite } from '../storage/monitor-run-records.js';
import { highValueAlert } from './high-value.js';
import type { RunDeps } from './run-starter.js';
import { compareProfiles, profileOf, RUN_PIPELINES, unescapeCell, type Profile } from './tracked-values.js';

/** Cells of the validity lookup's results in a run's row. */
const VALIDITY_COLUMNS = validityPipeline.resultColumns.length;

/** Targets per comparison checkpoint: one store transaction, and all a comparison holds in memory. */
export const COMPARE_BATCH = 1_000;
/** A result row may carry a long list of breaches: the guard against a broken file, not a limit on data. */
const MAX_RESULT_LINE_BYTES = 8 * 1024 * 1024;

export interface ComparisonTotals {
  changes: number;
  alerts: number;
}

interface ResultRow {
  seq: number;
  cells: string[];
}

/**
 * Compares a completed run job's results with each target's last result, streaming the job's `all`
 * file (its rows are the run's input, in order: row i is seq i) from where the run's cursor says,
 * one checkpoint per COMPARE_BATCH rows: snapshots, last results and the cursor in one store
 * transaction, so a comparison taken over after a crash redoes at most one batch, and writes the
 * same rows. Rows the job could not look up (status `invalid` or `error`) get a snapshot with an
 * error marker (`data: {error, status}`) and no comparison, and keep their last result.
 */
export async function compareRun(deps: RunDeps, claim: RunClaim, job: JobRecord, leaseMs: number, signal: AbortSignal): Promise<ComparisonTotals> {
  const { engine } = deps;
  if (job.resultAllKey === null) throw new AppError(ERROR_CODES.internal, `run job ${job.id} completed without a result file`);
  const width = job.header?.length ?? 1;
  const lookups = jobLookups(job.type, job.options);
  const resultWidth = lookups[0]!.pipeline.resultColumns.length;
  // A run with the validity lookup beside the type's own (an email monitor tracking `validity`):
  // the validity group follows the first lookup's results and its four engine cells.
  const validityAt = lookups.length > 1 ? width + resultWidth + 4 : undefined;
  let cursor = claim.compareCursor;
  const totals = { changes: claim.run.changesDetected ?? 0, alerts: claim.alertsDetected };
  let seq = -1;
  let batch: ResultRow[] = [];
  const commit = async (): Promise<void> => {
    const done = await commitBatch(deps, claim, batch, { cursor, width, resultWidth, validityAt, leaseUntil: engine.clock.now() + leaseMs });
    cursor += batch.length;
    totals.changes += done.changes;
    totals.alerts += done.alerts;
    batch = [];
  };
  const source = await engine.objects.getStream(job.resultAllKey, undefined, signal);
  for await (const rows of readCsvRows(source, { maxLineBytes: MAX_RESULT_LINE_BYTES }, signal)) {
    for (const cells of rows) {
      // The header is row -1; rows a committed batch covered are skipped.
      const row = seq++;
      if (row < cursor) continue;
      batch.push({ seq: row, cells });
      if (batch.length === COMPARE_BATCH) await commit();
    }
  }
  if (batch.length > 0) await commit();
  return totals;
}

async function commitBatch(
  deps: RunDeps,
  claim: RunClaim,
  rows: readonly ResultRow[],
  at: { cursor: number; width: number; resultWidth: number; validityAt: number | undefined; leaseUntil: number },
): Promise<ComparisonTotals> {
  const { run, monitor, lease } = claim;
  const pipeline = RUN_PIPELINES[monitor.type];
  const statusAt = at.width + at.resultWidth;
  const targets = rows.map((r) => targetOf(pipeline, r.cells[0] ?? ''));
  const last = await deps.engine.store.monitorRuns.lastData(monitor.id, targets);
  const snapshots: SnapshotWrite[] = [];
  const lastData: { target: string; data: string }[] = [];
  let changes = 0;
  let alerts = 0;
  rows.forEach((row, i) => {
    const target = targets[i]!;
    // With two lookups the row's own status (second to last cell) says whether either failed: an
    // unsettled validity keeps the target's last result rather than comparing half a profile.
    const status = at.validityAt === undefined ? row.cells[statusAt] : row.cells[row.cells.length - 2];
    if (status !== ROW_STATUSES.ok && status !== ROW_STATUSES.duplicate) {
      const errors = at.validityAt === undefined ? [row.cells[statusAt + 3]] : [row.cells[statusAt + 3], row.cells[at.validityAt + VALIDITY_COLUMNS + 3]];
      const data = JSON.stringify({ error: unescapeCell(errors.find((e) => e !== undefined && e !== '') ?? ''), status });
      snapshots.push({ seq: row.seq, target, data, changes: null, alert: null });
      return;
    }
    const profile = profileOf(monitor.type, row.cells.slice(at.width, at.width + at.resultWidth));
    if (at.validityAt !== undefined) profile.validity = unescapeCell(row.cells[at.validityAt] ?? '') || null;
    const stored = last.get(target);
    const previous = stored === undefined || stored === null ? null : (JSON.parse(stored) as Profile);
    const diff = compareProfiles(previous, profile, monitor.trackedFields, monitor.changeDetection);
    const alert = highValueAlert(monitor.type, target, previous, profile);
    const data = JSON.stringify(profile);
    snapshots.push({ seq: row.seq, target, data, changes: diff && JSON.stringify(diff), alert: alert && JSON.stringify(alert) });
    lastData.push({ target, data });
    if (diff) changes++;
    if (alert) alerts++;
  });
  const ok = await deps.engine.store.monitorRuns.commitComparison({ runId: run.id, monitorId: monitor.id, lease, cursor: at.cursor, snapshots, lastData, changes, alerts, leaseUntil: at.leaseUntil });
  if (!ok) throw new AppError(ERROR_CODES.leaseLost, `lost the comparison of monitor run ${run.id} at row ${at.cursor}`);
  return { changes, alerts };
}

/** A result row's key, read by the job's own rule from its input cell, so it is the key the job looked up. */
function targetOf(pipeline: Pipeline, cell: string): string {
  const raw = unescapeCell(cell);
  const read = pipeline.normalise(raw);
  return read.ok ? read.key : raw;
}
