import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { jobLookups, type JobLookup } from '../../pipelines/index.js';
import type { LookupOutcome, LookupProvider } from '../lookups/lookup-provider.js';
import { DAY_MS } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { ChunkLines, chunkObjectKey, decodeChunkRow, partObjectKey, ROW_KINDS, rowKey, type ChunkRow, type RowKey } from './chunk-format.js';
import { csvCells, csvLine, csvRecords } from './csv-writer.js';
import type { EngineDeps } from './engine-deps.js';
import { jobEndEvent } from './job-events.js';
import { EXPORT_FILTERS, JOB_STATUSES, PAUSE_REASONS, ROW_STATUSES, type ExportFilter, type RowStatus } from './job-states.js';
import { flaggedText, lookupErrorFlag, lookupFoundFlag, ROW_FLAGS, type BatchOutput, type ChunkRecord, type JobRecord, type Lease, type RowCounters } from './job-store.js';
import { lookupBatch } from './lookup-batch.js';
import { groupWidth, lookupCells, lookupStatus, originalCells, rowStatus, type LookupCell } from './render-row.js';

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
  lookups: readonly ActiveLookup[];
  signal: AbortSignal;
  /** In a retry pass: the rows being redone (indexes into the chunk) and their earlier state. */
  retry: RetryState | undefined;
}

interface ActiveLookup extends JobLookup {
  kind: string;
  provider: LookupProvider;
  /** Where this lookup's cells start in a row of a several-lookup job. */
  offset: number;
}

interface RetryState {
  /** Chunk row index of each position of the pass. */
  order: readonly number[];
  /** The chunk's rows as the last pass wrote them, and their flags. */
  records: readonly string[];
  flags: Buffer;
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
  const ctx: ChunkContext = { deps, job, chunk, lease, lookups: activeLookups(deps, job), signal, retry: undefined };
  const lines = new ChunkLines(await deps.objects.getBytes(chunkObjectKey(job.id, chunk.chunkIndex), signal));
  // The first pass works through every row; a retry pass through the rows that failed before.
  if (chunk.pass > 0) ctx.retry = await loadRetry(ctx);
  const order = ctx.retry?.order;
  let cursor = chunk.cursor;
  const started = deps.clock.now();
  while (cursor < chunk.passRows) {
    if (stop.aborted || deps.jobs.status(job.id) !== JOB_STATUSES.running) return 'stopped';
    if (deps.clock.now() - started > FAIR_SLICE_MS && deps.jobs.otherAccountStarved(job.accountId, deps.clock.now(), deps.limits.accountRunningJobs)) return 'stopped';
    const end = Math.min(cursor + deps.limits.batchRows, chunk.passRows);
    const rows: ChunkRow[] = [];
    for (let i = cursor; i < end; i++) rows.push(decodeChunkRow(lines.line(order === undefined ? i : order[i]!)));
    const { committed, paused } = await processBatch(ctx, rows, cursor);
    cursor += committed;
    if (paused) return 'paused';
    // An embedded lookup answers without any I/O, so a whole chunk would otherwise run as one
    // chain of microtasks: HTTP requests, the lease heartbeat and the S3 host would wait seconds.
    await yieldToEventLoop();
  }
  const flags = ctx.retry === undefined ? await writeParts(ctx) : await rewriteParts(ctx, ctx.retry);
  deps.jobs.completeChunk(job.id, chunk.chunkIndex, lease, flags.some((f) => (f & ROW_FLAGS.error) !== 0) ? flags : null, deps.clock.now());
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

async function processBatch(ctx: ChunkContext, rows: ChunkRow[], cursor: number): Promise<{ committed: number; paused: boolean }> {
  const { deps, job, chunk, lookups, retry } = ctx;
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
  // In a retry pass, a lookup that answered a row before keeps its cells; only failed ones are redone.
  const previous = retry && rows.map((_, i) => retry.order[cursor + i]!);
  const redo = (i: number, l: number): boolean => previous === undefined || lookups.length === 1 || (retry!.flags[previous[i]!]! & lookupErrorFlag(l)) !== 0;

  const plans = lookups.map((lookup, l) => {
    const firstKeys: string[] = [];
    const allKeys = new Set<string>();
    rows.forEach((row, i) => {
      const key = rowKey(row, l);
      if (!redo(i, l) || key.kind === ROW_KINDS.invalid) return;
      if (key.kind === ROW_KINDS.lookup) firstKeys.push(key.value);
      allKeys.add(key.value);
    });
    return {
      lookup,
      billed: deps.billing.freshlyBilled(job.accountId, lookup.kind, firstKeys, since),
      cached: lookup.provider.answersLocally ? new Map<string, unknown>() : deps.results.getMany<unknown>(lookup.kind, [...allKeys], since),
    };
  });

  // Reserve before looking up: rows this account cannot pay for are not looked up at all.
  const units = rows.map((row, i) =>
    plans.reduce((n, { billed }, l) => {
      const key = rowKey(row, l);
      return n + (redo(i, l) && key.kind === ROW_KINDS.lookup && !billed.has(key.value) ? 1 : 0);
    }, 0),
  );
  const wanted = units.reduce((a, b) => a + b, 0);
  const granted = wanted === 0 ? 0 : deps.billing.reserve(job.accountId, job.id, chunk.chunkIndex, wanted);
  let cut = 0;
  for (let sum = 0; cut < rows.length && sum + units[cut]! <= granted; cut++) sum += units[cut]!;
  const todo = rows.slice(0, cut);

  const answers = await Promise.all(
    plans.map(({ lookup, cached }, l) => {
      const misses = new Set<string>();
      todo.forEach((row, i) => {
        const key = rowKey(row, l);
        if (redo(i, l) && key.kind !== ROW_KINDS.invalid && !cached.has(key.value)) misses.add(key.value);
      });
      return lookupBatch([...misses], { accountId: job.accountId, provider: lookup.provider, limiters: deps.limiters, signal: ctx.signal });
    }),
  );

  const now = deps.clock.now();
  if (answers.some((a) => [...a.values()].some((o) => !o.ok && o.code === ERROR_CODES.providerUnavailable))) return pauseForProvider(ctx, now);
  return deps.db.transaction(() => {
    const outcomes = plans.map(({ cached }, l) => todo.map((row, i) => (redo(i, l) ? outcomeOf(rowKey(row, l), cached, answers[l]!) : undefined)));
    // Only first occurrences that were answered are billable; the rest are free by rule.
    const items: { kind: number; key: string; row: number }[] = [];
    todo.forEach((row, i) => {
      plans.forEach((_, l) => {
        const key = rowKey(row, l);
        if (redo(i, l) && key.kind === ROW_KINDS.lookup && outcomes[l]![i]?.ok) items.push({ kind: l, key: key.value, row: i });
      });
    });
    const charge = deps.billing.chargeRows({
      accountId: job.accountId,
      kinds: lookups.map((l) => l.kind),
      items,
      jobId: job.id,
      // A retry pass redoes rows under cursors the first pass used: its batches get ids of their own.
      batchId: chunk.pass === 0 ? `${chunk.chunkIndex}:${cursor}` : `${chunk.chunkIndex}:${cursor}:pass${chunk.pass}`,
      now,
      since,
      billed: plans.map((p) => p.billed),
    });
    const stopAt = charge.unpaidRow ?? todo.length;
    const counters: RowCounters = { processed: stopAt, found: 0, invalid: 0, duplicate: 0, error: 0, credits: charge.total };
    const output: BatchOutput = { allText: '', rowEnds: Buffer.alloc(stopAt * 4), rowFlags: Buffer.alloc(stopAt) };
    for (let i = 0; i < stopAt; i++) {
      const row = todo[i]!;
      const cells: (LookupCell | undefined)[] = plans.map(({ cached }, l) => {
        if (!redo(i, l)) return undefined;
        const key = rowKey(row, l);
        return { key, outcome: outcomes[l]![i], hit: cached.has(key.value), charged: key.kind === ROW_KINDS.lookup && charge.charged[l]!.has(key.value) };
      });
      const before = previous && { record: retry!.records[previous[i]!]!, flags: retry!.flags[previous[i]!]! };
      const rendered = renderRow(ctx, row, cells, before);
      plans.forEach(({ lookup, cached }, l) => {
        const key = rowKey(row, l);
        const outcome = outcomes[l]![i];
        if (redo(i, l) && key.kind === ROW_KINDS.lookup && outcome?.ok && !cached.has(key.value) && !lookup.provider.answersLocally) deps.results.put(lookup.kind, key.value, outcome.result, now);
      });
      if (rendered.status !== ROW_STATUSES.ok) counters[rendered.status]++;
      if (rendered.flags & ROW_FLAGS.found) counters.found++;
      output.allText += rendered.text;
      output.rowEnds.writeUInt32LE(output.allText.length, i * 4);
      output.rowFlags[i] = rendered.flags;
      // A retried row was counted, as an error, by the pass before: it now counts as what it became.
      if (before) {
        counters.error--;
        if (before.flags & ROW_FLAGS.found) counters.found--;
      }
    }
    if (previous) counters.processed = 0;
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

function outcomeOf(key: RowKey, cached: Map<string, unknown>, answers: Map<string, LookupOutcome<unknown>>): LookupOutcome<unknown> | undefined {
  if (key.kind === ROW_KINDS.invalid) return undefined;
  return cached.has(key.value) ? { ok: true, result: cached.get(key.value) } : answers.get(key.value);
}

/**
 * One result row's text, its status and its ROW_FLAGS. `cells` has one entry per lookup; an
 * undefined entry (a lookup a retry pass does not redo) keeps its cells from `previous`, the row
 * as the last pass wrote it.
 */
function renderRow(
  ctx: ChunkContext,
  row: ChunkRow,
  cells: readonly (LookupCell | undefined)[],
  previous: { record: string; flags: number } | undefined,
): { text: string; status: RowStatus; flags: number } {
  const { job, lookups } = ctx;
  const out = originalCells(job.header?.length ?? 0, row.cells);
  if (lookups.length === 1) {
    const { status, found } = lookupStatus(lookups[0]!, cells[0]!);
    out.push(...lookupCells(lookups[0]!, cells[0]!, status));
    return { text: csvLine(out), status, flags: (found ? ROW_FLAGS.found : 0) | (status === ROW_STATUSES.error ? ROW_FLAGS.error : 0) };
  }
  const old = previous === undefined ? undefined : csvCells(previous.record);
  const statuses: string[] = [];
  let credits = 0;
  let flags = 0;
  lookups.forEach((lookup, l) => {
    const cell = cells[l];
    const fresh = cell === undefined ? undefined : lookupStatus(lookup, cell);
    const group = cell === undefined ? old!.slice(lookup.offset, lookup.offset + groupWidth(lookup)) : lookupCells(lookup, cell, fresh!.status);
    const at = lookup.pipeline.resultColumns.length;
    const status = group[at]!;
    const found = fresh === undefined ? (previous!.flags & lookupFoundFlag(l)) !== 0 : fresh.found;
    statuses.push(status);
    credits += Number(group[at + 1]);
    if (found) flags |= ROW_FLAGS.found | lookupFoundFlag(l);
    if (status === ROW_STATUSES.error) flags |= ROW_FLAGS.error | lookupErrorFlag(l);
    out.push(...group);
  });
  const status = rowStatus(statuses);
  out.push(status, String(credits));
  return { text: csvLine(out), status, flags };
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
  for (const output of deps.jobs.outputs(job.id, chunk.chunkIndex)) {
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
  for (const output of deps.jobs.outputs(job.id, chunk.chunkIndex)) {
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
