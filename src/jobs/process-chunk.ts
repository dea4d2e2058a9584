import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { jobLookups } from '../../pipelines/index.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { flaggedText, ROW_FLAGS, type ChunkRecord, type JobRecord, type Lease } from '../storage/job-records.js';
import { EXPORT_FILTERS, JOB_STATUSES, type ExportFilter } from '../storage/job-states.js';
import { batchEnd } from './batch-plan.js';
import { ChunkLines, chunkObjectKey, decodeChunkRow, partObjectKey, type ChunkRow } from './chunk-format.js';
import { csvRecords } from './csv-writer.js';
import type { EngineDeps } from './engine-deps.js';
import { processBatch, type ActiveLookup, type ChunkContext, type RetryState } from './process-batch.js';
import { deferredRetryAt } from './deferred-passes.js';
import { groupWidth } from './render-row.js';

export type ChunkOutcome = 'done' | 'stopped' | 'paused';

/**
 * How long a chunk keeps its worker slot while another account waits with nothing in work. After
 * that it hands the slot over at the next batch boundary and goes on later from its cursor.
 */
export const FAIR_SLICE_MS = 2_000;

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
  const job = await deps.jobs.require(chunk.jobId);
  const ctx: ChunkContext = { deps, job, chunk, lease, lookups: activeLookups(deps, job), signal, retry: undefined };
  const lines = new ChunkLines(await deps.objects.getBytes(chunkObjectKey(job.id, chunk.chunkIndex), signal));
  // The first pass works through every row; a retry pass through the rows that failed before.
  if (chunk.pass > 0) ctx.retry = await loadRetry(ctx);
  const order = ctx.retry?.order;
  const lineBytes = (i: number): number => lines.byteLength(order === undefined ? i : order[i]!);
  let cursor = chunk.cursor;
  const started = deps.clock.now();
  while (cursor < chunk.passRows) {
    if (stop.aborted || (await deps.jobs.status(job.id)) !== JOB_STATUSES.running) return 'stopped';
    if (deps.clock.now() - started > FAIR_SLICE_MS && (await deps.jobs.otherAccountStarved(job.accountId, deps.clock.now(), deps.limits.accountRunningJobs))) return 'stopped';
    const end = batchEnd(lineBytes, cursor, chunk.passRows, deps.limits.batchRows, deps.limits.batchBytes);
    const rows: ChunkRow[] = [];
    for (let i = cursor; i < end; i++) rows.push(decodeChunkRow(lines.line(order === undefined ? i : order[i]!)));
    const { committed, paused, waiting } = await processBatch(ctx, rows, cursor);
    cursor += committed;
    if (paused) return 'paused';
    if (waiting) return 'stopped';
    // An embedded lookup answers without any I/O, so a whole chunk would otherwise run as one
    // chain of microtasks: HTTP requests, the lease heartbeat and the S3 host would wait seconds.
    await yieldToEventLoop();
  }
  const flags = ctx.retry === undefined ? await writeParts(ctx) : await rewriteParts(ctx, ctx.retry);
  const failed = flags.some((f) => (f & ROW_FLAGS.error) !== 0);
  const now = deps.clock.now();
  const retryAt = failed ? deferredRetryAt(ctx, now) : undefined;
  await deps.jobs.completeChunk(job.id, chunk.chunkIndex, lease, failed ? flags : null, now, retryAt);
  return 'done';
}


function activeLookups(deps: EngineDeps, job: JobRecord): ActiveLookup[] {
  let offset = job.header?.length ?? 0;
  return jobLookups(job.type, job.options).map((lookup) => {
    const kind = lookup.pipeline.lookupKind;
    const provider = deps.providers.get(kind);
    if (!provider) throw new AppError(ERROR_CODES.internal, `no lookup provider for ${kind}`);
    const active = { ...lookup, kind, provider, offset };
    offset += groupWidth(lookup);
    return active;
  });
}

/** A retry pass starts from the chunk's part as the last pass left it. */
async function loadRetry(ctx: ChunkContext): Promise<RetryState> {
  const { deps, job, chunk } = ctx;
  const records = csvRecords((await deps.objects.getBytes(partObjectKey(job.id, chunk.chunkIndex, 'all'), ctx.signal)).toString('utf8'));
  const flags = chunk.rowFlags ?? Buffer.alloc(0);
  if (records.length !== chunk.rowCount || flags.length !== chunk.rowCount) {
    throw new AppError(ERROR_CODES.internal, `chunk ${chunk.chunkIndex} of ${job.id}: part has ${records.length} rows, flags ${flags.length}, chunk ${chunk.rowCount}`);
  }
  return { order: flaggedRows(flags, ROW_FLAGS.error), records, flags };
}

/**
 * The chunk's committed outputs become its part objects, one per export filter; rewriting them
 * after a crash is harmless. Returns the chunk's row flags.
 */
async function writeParts(ctx: ChunkContext): Promise<Buffer> {
  const { deps, job, chunk } = ctx;
  // Each batch's text becomes bytes as soon as it is read: a chunk's worth of strings held until
  // the last batch would be promoted to V8's old space, to die there once the parts are written.
  const bytes: Record<ExportFilter, Buffer[]> = { all: [], found: [], errors: [] };
  const flags: Buffer[] = [];
  for await (const output of deps.jobs.outputs(job.id, chunk.chunkIndex)) {
    bytes.all.push(Buffer.from(output.allText));
    bytes.found.push(Buffer.from(flaggedText(output, ROW_FLAGS.found)));
    bytes.errors.push(Buffer.from(flaggedText(output, ROW_FLAGS.error)));
    flags.push(output.rowFlags);
  }
  await putParts(ctx, { all: Buffer.concat(bytes.all), found: Buffer.concat(bytes.found), errors: Buffer.concat(bytes.errors) });
  return Buffer.concat(flags);
}

/**
 * After a retry pass: the chunk's earlier `all` part with each retried row replaced by its new
 * text, and `found` and `errors` made again from it. Rows are cut from our own CSV, so a line end
 * inside quotes never splits a row. Returns the chunk's new row flags.
 */
async function rewriteParts(ctx: ChunkContext, retry: RetryState): Promise<Buffer> {
  const { deps, job, chunk } = ctx;
  const rows = [...retry.records];
  const flags = Buffer.from(retry.flags);
  let at = 0;
  for await (const output of deps.jobs.outputs(job.id, chunk.chunkIndex)) {
    const retried = csvRecords(output.allText);
    retried.forEach((text, i) => {
      const row = retry.order[at + i]!;
      rows[row] = text;
      flags[row] = output.rowFlags[i]!;
    });
    at += retried.length;
  }
  const pick = (bit: number) => rows.filter((_, i) => (flags[i]! & bit) !== 0).join('');
  await putParts(ctx, { all: rows.join(''), found: pick(ROW_FLAGS.found), errors: pick(ROW_FLAGS.error) });
  return flags;
}

async function putParts(ctx: ChunkContext, parts: Record<ExportFilter, string | Buffer>): Promise<void> {
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
