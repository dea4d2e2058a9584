import { pipelineFor } from '../../pipelines/index.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import type { LookupOutcome } from '../lookups/lookup-provider.js';
import { DAY_MS } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { chunkObjectKey, decodeChunkRow, partObjectKey, ROW_KINDS, type ChunkRow } from './chunk-format.js';
import { csvLine, escapeFormula } from './csv-writer.js';
import type { EngineDeps } from './engine-deps.js';
import { JOB_STATUSES, PAUSE_REASONS, ROW_STATUSES } from './job-states.js';
import type { ChunkRecord, JobRecord, Lease, RowCounters } from './job-store.js';
import { lookupBatch } from './lookup-batch.js';

export type ChunkOutcome = 'done' | 'stopped' | 'paused';

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
  let cursor = chunk.cursor;
  while (cursor < chunk.rowCount) {
    if (stop.aborted || deps.jobs.status(job.id) !== JOB_STATUSES.running) return 'stopped';
    const end = Math.min(cursor + deps.limits.batchRows, chunk.rowCount);
    const rows = lines.slice(cursor, end).map(decodeChunkRow);
    const { committed, paused } = await processBatch(ctx, rows, cursor);
    cursor += committed;
    if (paused) return 'paused';
  }
  await writeParts(ctx);
  deps.jobs.completeChunk(job.id, chunk.chunkIndex, lease, deps.clock.now());
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
  return deps.db.transaction(() => {
    const counters: RowCounters = { processed: 0, found: 0, invalid: 0, duplicate: 0, error: 0, credits: 0 };
    let allText = '';
    let foundText = '';
    let outOfCredits = cut < rows.length;
    for (const row of todo) {
      const line = renderRow(ctx, row, cached, answers, counters, now, since);
      if (line === undefined) {
        outOfCredits = true;
        break;
      }
      allText += line.text;
      if (line.found) foundText += line.text;
    }
    if (counters.processed > 0) {
      deps.jobs.advanceChunk(job.id, chunk.chunkIndex, ctx.lease, cursor, counters.processed);
      deps.jobs.insertOutput(job.id, chunk.chunkIndex, cursor, allText, foundText);
      deps.jobs.addCounters(job.id, counters, now);
    }
    deps.billing.releaseReservation(job.id, chunk.chunkIndex);
    if (outOfCredits && deps.jobs.status(job.id) === JOB_STATUSES.running) {
      deps.jobs.transition(job.id, JOB_STATUSES.paused, { reason: PAUSE_REASONS.insufficientCredits, now });
      deps.billing.releaseJobReservations(job.id);
    }
    return { committed: counters.processed, paused: outOfCredits };
  })();
}

/**
 * Renders one result row and settles its charge. Returns undefined, writing nothing, when the row
 * needs a credit that the account no longer has: the batch stops there and the job pauses.
 */
function renderRow(
  ctx: ChunkContext,
  row: ChunkRow,
  cached: Map<string, unknown>,
  answers: Map<string, LookupOutcome<unknown>>,
  counters: RowCounters,
  now: number,
  since: number,
): { text: string; found: boolean } | undefined {
  const { deps, job, pipeline } = ctx;
  const width = job.header?.length ?? 0;
  const empty = pipeline.resultColumns.map(() => '');
  if (row.kind === ROW_KINDS.invalid) {
    counters.processed++;
    counters.invalid++;
    return { text: line(width, row.cells, empty, ROW_STATUSES.invalid, 0, false, row.value), found: false };
  }
  const hit = cached.has(row.value);
  const outcome: LookupOutcome<unknown> = hit ? { ok: true, result: cached.get(row.value) } : answers.get(row.value)!;
  if (!outcome.ok) {
    counters.processed++;
    counters.error++;
    return { text: line(width, row.cells, empty, ROW_STATUSES.error, 0, false, outcome.code), found: false };
  }
  const found = pipeline.isFound(outcome.result);
  const cells = pipeline.resultCells(outcome.result);
  if (row.kind === ROW_KINDS.duplicate) {
    counters.processed++;
    counters.duplicate++;
    if (found) counters.found++;
    // Whether a repeat's answer came from the cache depends on chunk timing, so it is not shown.
    return { text: line(width, row.cells, cells, ROW_STATUSES.duplicate, 0, false, ''), found };
  }
  const credits = deps.billing.chargeOnce(job.accountId, pipeline.lookupKind, row.value, job.id, now, since);
  if (credits === 'insufficient') return undefined;
  if (!hit) deps.results.put(pipeline.lookupKind, row.value, outcome.result, now);
  counters.processed++;
  counters.credits += credits;
  if (found) counters.found++;
  return { text: line(width, row.cells, cells, ROW_STATUSES.ok, credits, hit, ''), found };
}

function line(width: number, original: string[], result: string[], status: string, credits: number, cached: boolean, error: string): string {
  const cells = original.map(escapeFormula);
  // Short rows are padded so that the result columns stay under their headers.
  while (cells.length < width) cells.push('');
  for (const cell of result) cells.push(escapeFormula(cell));
  cells.push(status, String(credits), cached ? 'true' : 'false', error);
  return csvLine(cells);
}

/** The chunk's committed outputs become its part objects; rewriting them after a crash is harmless. */
async function writeParts(ctx: ChunkContext): Promise<void> {
  const { deps, job, chunk } = ctx;
  const all: string[] = [];
  const found: string[] = [];
  for (const output of deps.jobs.outputs(job.id, chunk.chunkIndex)) {
    all.push(output.allText);
    found.push(output.foundText);
  }
  await Promise.all([
    deps.objects.putBytes(partObjectKey(job.id, chunk.chunkIndex, 'all'), all.join(''), { contentType: 'text/csv', signal: ctx.signal }),
    deps.objects.putBytes(partObjectKey(job.id, chunk.chunkIndex, 'found'), found.join(''), { contentType: 'text/csv', signal: ctx.signal }),
  ]);
}

export function outputHeader(job: JobRecord, pipeline: Pipeline): string {
  return csvLine([...(job.header ?? []).map(escapeFormula), ...pipeline.resultColumns, 'status', 'credits', 'cached', 'error']);
}
