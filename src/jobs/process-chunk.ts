import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { pipelineFor } from '../../pipelines/index.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import type { LookupOutcome } from '../lookups/lookup-provider.js';
import { DAY_MS } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { chunkObjectKey, decodeChunkRow, partObjectKey, ROW_KINDS, type ChunkRow } from './chunk-format.js';
import { csvLine, csvRecords, escapeFormula } from './csv-writer.js';
import type { EngineDeps } from './engine-deps.js';
import { jobEndEvent } from './job-events.js';
import { EXPORT_FILTERS, JOB_STATUSES, PAUSE_REASONS, ROW_STATUSES, type ExportFilter } from './job-states.js';
import { ROW_FLAGS, type ChunkRecord, type JobRecord, type Lease, type RowCounters } from './job-store.js';
import { lookupBatch } from './lookup-batch.js';

export type ChunkOutcome = 'done' | 'stopped' | 'paused';

/**
 * How long a chunk keeps its worker slot while another account waits with nothing in work. After
 * that it hands the slot over at the next batch boundary and goes on later from its cursor.
 */
export const FAIR_SLICE_MS = 2_000;

interface ChunkContext {
  deps: EngineDeps;
  job: JobRecord;
  chunk: ChunkRecord;
  lease: Lease;
  pipeline: Pipeline;
  signal: AbortSignal;
}

/**
 * Works through one chunk under its lease, batch by batch, from the chunk's cursor. Each batch is
 * one checkpoint transaction (outputs, charges, result cache, cursor), so a crash at any moment
 * loses at most the batch in flight, which is then redone exactly as it would have been.
 * `stop` is checked between batches: a stopping worker finishes the batch it is in.
 */
export async function processChunk(
  deps: EngineDeps,
  chunk: ChunkRecord,
  lease: Lease,
  signal: AbortSignal,
  stop: AbortSignal,
): Promise<ChunkOutcome> {
  const job = deps.jobs.require(chunk.jobId);
  const ctx: ChunkContext = { deps, job, chunk, lease, pipeline: pipelineFor(job.type), signal };
  const lines = (await deps.objects.getBytes(chunkObjectKey(job.id, chunk.chunkIndex), signal)).toString('utf8').split('\n');
  // The first pass works through every row; a retry pass through the rows that failed before.
  const order = chunk.pass === 0 ? undefined : flaggedRows(chunk.rowFlags, ROW_FLAGS.error);
  let cursor = chunk.cursor;
  const started = deps.clock.now();
  while (cursor < chunk.passRows) {
    if (stop.aborted || deps.jobs.status(job.id) !== JOB_STATUSES.running) return 'stopped';
    if (deps.clock.now() - started > FAIR_SLICE_MS && deps.jobs.otherAccountStarved(job.accountId, deps.clock.now(), deps.limits.accountRunningJobs)) return 'stopped';
    const end = Math.min(cursor + deps.limits.batchRows, chunk.passRows);
    const rows: ChunkRow[] = [];
    for (let i = cursor; i < end; i++) rows.push(decodeChunkRow(lines[order === undefined ? i : order[i]!]!));
    const { committed, paused } = await processBatch(ctx, rows, cursor);
    cursor += committed;
    if (paused) return 'paused';
    // An embedded lookup answers without any I/O, so a whole chunk would otherwise run as one
    // chain of microtasks: HTTP requests, the lease heartbeat and the S3 host would wait seconds.
    await yieldToEventLoop();
  }
  const flags = order === undefined ? await writeParts(ctx) : await rewriteParts(ctx, order);
  deps.jobs.completeChunk(job.id, chunk.chunkIndex, lease, flags.some((f) => (f & ROW_FLAGS.error) !== 0) ? flags : null, deps.clock.now());
  return 'done';
}

async function processBatch(ctx: ChunkContext, rows: ChunkRow[], cursor: number): Promise<{ committed: number; paused: boolean }> {
  const { deps, job, chunk, pipeline } = ctx;
  const kind = pipeline.lookupKind;
  const provider = deps.providers.get(kind);
  if (!provider) throw new AppError(ERROR_CODES.internal, `no lookup provider for ${kind}`);
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;

  const firstKeys = rows.filter((r) => r.kind === ROW_KINDS.lookup).map((r) => r.value);
  const allKeys = [...new Set(rows.filter((r) => r.kind !== ROW_KINDS.invalid).map((r) => r.value))];
  const billed = deps.billing.freshlyBilled(job.accountId, kind, firstKeys, since);
  const cached = deps.results.getMany<unknown>(kind, allKeys, since);

  // Reserve before looking up: rows this account cannot pay for are not looked up at all.
  const billable = rows.flatMap((r, i) => (r.kind === ROW_KINDS.lookup && !billed.has(r.value) ? [i] : []));
  const granted = billable.length === 0 ? 0 : deps.billing.reserve(job.accountId, job.id, chunk.chunkIndex, billable.length);
  const cut = granted < billable.length ? billable[granted]! : rows.length;
  const todo = rows.slice(0, cut);

  const misses = [...new Set(todo.filter((r) => r.kind !== ROW_KINDS.invalid && !cached.has(r.value)).map((r) => r.value))];
  const answers = await lookupBatch(misses, { accountId: job.accountId, provider, limiters: deps.limiters, signal: ctx.signal });

  const now = deps.clock.now();
  if ([...answers.values()].some((a) => !a.ok && a.code === ERROR_CODES.providerUnavailable)) return pauseForProvider(ctx, now);
  return deps.db.transaction(() => {
    const outcomes = todo.map((row) => outcomeOf(row, cached, answers));
    // Only first occurrences that were answered are billable; the rest are free by rule.
    const payable = todo.flatMap((row, i) => (row.kind === ROW_KINDS.lookup && outcomes[i]?.ok ? [i] : []));
    const charge = deps.billing.chargeBatch({
      accountId: job.accountId,
      kind,
      keys: payable.map((i) => todo[i]!.value),
      jobId: job.id,
      // A retry pass redoes rows under cursors the first pass used: its batches get ids of their own.
      batchId: chunk.pass === 0 ? `${chunk.chunkIndex}:${cursor}` : `${chunk.chunkIndex}:${cursor}:pass${chunk.pass}`,
      now,
      since,
    });
    const stopAt = charge.unpaidFrom === undefined ? todo.length : payable[charge.unpaidFrom]!;
    const counters: RowCounters = { processed: stopAt, found: 0, invalid: 0, duplicate: 0, error: 0, credits: charge.charged.size };
    const output = { allText: '', foundText: '', errorsText: '', rowFlags: Buffer.alloc(stopAt) };
    for (let i = 0; i < stopAt; i++) {
      const row = todo[i]!;
      const outcome = outcomes[i];
      const rendered = renderRow(ctx, row, outcome, cached.has(row.value), charge.charged.has(row.value), counters);
      if (row.kind === ROW_KINDS.lookup && outcome?.ok && !cached.has(row.value)) deps.results.put(kind, row.value, outcome.result, now);
      output.allText += rendered.text;
      if (rendered.found) output.foundText += rendered.text;
      if (outcome?.ok === false) output.errorsText += rendered.text;
      output.rowFlags[i] = (rendered.found ? ROW_FLAGS.found : 0) | (outcome?.ok === false ? ROW_FLAGS.error : 0);
    }
    if (chunk.pass > 0) {
      // These rows were counted, as errors, by an earlier pass: they now count as what they became.
      counters.processed = 0;
      counters.error -= stopAt;
    }
    if (stopAt > 0) {
      deps.jobs.advanceChunk(job.id, chunk.chunkIndex, ctx.lease, cursor, stopAt);
      deps.jobs.insertOutput(job.id, chunk.chunkIndex, cursor, output);
      deps.jobs.addCounters(job.id, counters, now);
    }
    deps.billing.releaseReservation(job.id, chunk.chunkIndex);
    if (counters.error > 0 && deps.jobs.overErrorBudget(job)) {
      failForErrorBudget(ctx, now);
      return { committed: stopAt, paused: false };
    }
    const outOfCredits = stopAt < rows.length;
    if (outOfCredits && deps.jobs.status(job.id) === JOB_STATUSES.running) {
      deps.jobs.transition(job.id, JOB_STATUSES.paused, { reason: PAUSE_REASONS.insufficientCredits, now });
      deps.billing.releaseJobReservations(job.id);
    }
    return { committed: stopAt, paused: outOfCredits };
  }).immediate();
}

/**
 * A provider that is down would turn every row into an error; instead the batch commits nothing
 * and the job pauses, to be resumed by a worker once the wait is over. The batch is then redone
 * from the same cursor, exactly as if this attempt had never happened.
 */
function pauseForProvider(ctx: ChunkContext, now: number): { committed: number; paused: boolean } {
  const { deps, job, chunk } = ctx;
  deps.db.transaction(() => {
    deps.billing.releaseReservation(job.id, chunk.chunkIndex);
    if (deps.jobs.status(job.id) !== JOB_STATUSES.running) return;
    deps.jobs.transition(job.id, JOB_STATUSES.paused, { reason: PAUSE_REASONS.providerUnavailable, message: 'the lookup provider is unavailable; the job resumes on its own', now });
    deps.billing.releaseJobReservations(job.id);
  }).immediate();
  deps.log.warn({ jobId: job.id, chunk: chunk.chunkIndex }, 'lookup provider unavailable; job paused');
  return { committed: 0, paused: true };
}

/**
 * More rows failed than the job's budget allows: the job fails with `error_budget_exceeded`, inside
 * the checkpoint that crossed the line, keeping every committed row. `retry-failed` redoes them.
 */
function failForErrorBudget(ctx: ChunkContext, now: number): void {
  const { deps, job } = ctx;
  if (deps.jobs.status(job.id) !== JOB_STATUSES.running) return;
  const rate = job.options.maxErrorRate ?? 0;
  const message = `more than ${Math.floor(rate * (job.totalRows ?? 0))} rows (${rate * 100}% of ${job.totalRows}) failed; retry them with \`sluice jobs retry-failed ${job.id}\``;
  const ended: JobRecord = { ...deps.jobs.require(job.id), status: JOB_STATUSES.failed, reason: ERROR_CODES.errorBudgetExceeded, errorMessage: message, finishedAt: now };
  deps.jobs.transition(job.id, JOB_STATUSES.failed, { reason: ERROR_CODES.errorBudgetExceeded, message, now, event: jobEndEvent(ended, now) });
  deps.billing.releaseJobReservations(job.id);
  deps.log.warn({ jobId: job.id }, 'failure budget exceeded; job failed');
}

function outcomeOf(row: ChunkRow, cached: Map<string, unknown>, answers: Map<string, LookupOutcome<unknown>>): LookupOutcome<unknown> | undefined {
  if (row.kind === ROW_KINDS.invalid) return undefined;
  return cached.has(row.value) ? { ok: true, result: cached.get(row.value) } : answers.get(row.value);
}

/** One result row's text, and its share of the batch's counters. */
function renderRow(
  ctx: ChunkContext,
  row: ChunkRow,
  outcome: LookupOutcome<unknown> | undefined,
  hit: boolean,
  charged: boolean,
  counters: RowCounters,
): { text: string; found: boolean } {
  const { job, pipeline } = ctx;
  const width = job.header?.length ?? 0;
  if (outcome === undefined) {
    counters.invalid++;
    return { text: line(width, row.cells, emptyCells(pipeline), ROW_STATUSES.invalid, 0, false, row.value), found: false };
  }
  if (!outcome.ok) {
    counters.error++;
    return { text: line(width, row.cells, emptyCells(pipeline), ROW_STATUSES.error, 0, false, outcome.code), found: false };
  }
  const found = pipeline.isFound(outcome.result);
  if (found) counters.found++;
  const cells = pipeline.resultCells(outcome.result);
  if (row.kind === ROW_KINDS.duplicate) {
    counters.duplicate++;
    // Whether a repeat's answer came from the cache depends on chunk timing, so it is not shown.
    return { text: line(width, row.cells, cells, ROW_STATUSES.duplicate, 0, false, ''), found };
  }
  return { text: line(width, row.cells, cells, ROW_STATUSES.ok, charged ? 1 : 0, hit, ''), found };
}

function emptyCells(pipeline: Pipeline): string[] {
  return pipeline.resultColumns.map(() => '');
}

function line(width: number, original: string[], result: string[], status: string, credits: number, cached: boolean, error: string): string {
  const cells = original.map(escapeFormula);
  // Short rows are padded so that the result columns stay under their headers.
  while (cells.length < width) cells.push('');
  for (const cell of result) cells.push(escapeFormula(cell));
  cells.push(status, String(credits), cached ? 'true' : 'false', escapeFormula(error));
  return csvLine(cells);
}

/**
 * The chunk's committed outputs become its part objects, one per export filter; rewriting them
 * after a crash is harmless. Returns the chunk's row flags.
 */
async function writeParts(ctx: ChunkContext): Promise<Buffer> {
  const { deps, job, chunk } = ctx;
  const texts: Record<ExportFilter, string[]> = { all: [], found: [], errors: [] };
  const flags: Buffer[] = [];
  for (const output of deps.jobs.outputs(job.id, chunk.chunkIndex)) {
    texts.all.push(output.allText);
    texts.found.push(output.foundText);
    texts.errors.push(output.errorsText);
    flags.push(output.rowFlags);
  }
  await putParts(ctx, { all: texts.all.join(''), found: texts.found.join(''), errors: texts.errors.join('') });
  return Buffer.concat(flags);
}

/**
 * After a retry pass: the chunk's earlier `all` part with each retried row replaced by its new
 * text, and `found` and `errors` made again from it. Rows are cut from our own CSV, so a line end
 * inside quotes never splits a row. Returns the chunk's new row flags.
 */
async function rewriteParts(ctx: ChunkContext, order: readonly number[]): Promise<Buffer> {
  const { deps, job, chunk } = ctx;
  const rows = csvRecords((await deps.objects.getBytes(partObjectKey(job.id, chunk.chunkIndex, 'all'), ctx.signal)).toString('utf8'));
  const flags = Buffer.from(chunk.rowFlags ?? Buffer.alloc(rows.length));
  if (rows.length !== chunk.rowCount || flags.length !== chunk.rowCount) {
    throw new AppError(ERROR_CODES.internal, `chunk ${chunk.chunkIndex} of ${job.id}: part has ${rows.length} rows, flags ${flags.length}, chunk ${chunk.rowCount}`);
  }
  let at = 0;
  for (const output of deps.jobs.outputs(job.id, chunk.chunkIndex)) {
    const retried = csvRecords(output.allText);
    retried.forEach((text, i) => {
      const row = order[at + i]!;
      rows[row] = text;
      flags[row] = output.rowFlags[i]!;
    });
    at += retried.length;
  }
  const pick = (bit: number) => rows.filter((_, i) => (flags[i]! & bit) !== 0).join('');
  await putParts(ctx, { all: rows.join(''), found: pick(ROW_FLAGS.found), errors: pick(ROW_FLAGS.error) });
  return flags;
}

async function putParts(ctx: ChunkContext, parts: Record<ExportFilter, string>): Promise<void> {
  const { deps, job, chunk } = ctx;
  await Promise.all(
    EXPORT_FILTERS.map((filter) =>
      deps.objects.putBytes(partObjectKey(job.id, chunk.chunkIndex, filter), parts[filter], { contentType: 'text/csv', signal: ctx.signal }),
    ),
  );
}

/** The row indexes whose flag has `bit`, in order. */
function flaggedRows(flags: Buffer | null, bit: number): number[] {
  const rows: number[] = [];
  flags?.forEach((f, i) => {
    if (f & bit) rows.push(i);
  });
  return rows;
}

export function outputHeader(job: JobRecord, pipeline: Pipeline): string {
  return csvLine([...(job.header ?? []).map(escapeFormula), ...pipeline.resultColumns, 'status', 'credits', 'cached', 'error']);
}
