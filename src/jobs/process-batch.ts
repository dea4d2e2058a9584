import type { JobLookup } from '../../pipelines/index.js';
import { planCharges, type BillableItem, type ChargePlan } from '../billing/plan-charges.js';
import type { LookupOutcome, LookupProvider } from '../lookups/lookup-provider.js';
import { DAY_MS } from '../shared/clock.js';
import { sleep } from '../shared/sleep.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { BatchOutput, ChunkRecord, JobRecord, Lease, RowCounters } from '../storage/job-records.js';
import { lookupErrorFlag, lookupFoundFlag, ROW_FLAGS } from '../storage/job-records.js';
import { PAUSE_REASONS, ROW_STATUSES, type RowStatus } from '../storage/job-states.js';
import { ROW_KINDS, rowKey, type ChunkRow, type RowKey } from './chunk-format.js';
import { csvCells, csvLine } from './csv-writer.js';
import type { EngineDeps } from './engine-deps.js';
import { lookupBatch } from './lookup-batch.js';
import { deferredRetryAt } from './deferred-passes.js';
import { groupWidth, lookupCells, lookupStatus, originalCells, rowStatus, type LookupCell } from './render-row.js';

export interface ChunkContext {
  deps: EngineDeps;
  job: JobRecord;
  chunk: ChunkRecord;
  lease: Lease;
  lookups: readonly ActiveLookup[];
  signal: AbortSignal;
  /** In a retry pass: the rows being redone (indexes into the chunk) and their earlier state. */
  retry: RetryState | undefined;
}

export interface ActiveLookup extends JobLookup {
  kind: string;
  provider: LookupProvider;
  /** Where this lookup's cells start in a row of a several-lookup job. */
  offset: number;
}

export interface RetryState {
  /** Chunk row index of each position of the pass. */
  order: readonly number[];
  /** The chunk's rows as the last pass wrote them, and their flags. */
  records: readonly string[];
  flags: Buffer;
}

/**
 * Plans after which a checkpoint still finds its charges changed under it (another job billed the
 * same keys, or the balance fell) are very unlikely: each conflict tells the plan what is true.
 */
const MAX_COMMIT_ATTEMPTS = 5;
/** How long a chunk that found the account's credits reserved by its other chunks waits before trying again. */
const CREDIT_WAIT_MS = 50;

/**
 * One batch: plan (what is billed, cached, and reserved), look up the misses, render the rows,
 * commit them in one checkpoint. When the checkpoint finds that keys were billed or the balance
 * fell since the plan, nothing was written: the rows are rendered again from what it reports.
 */
export async function processBatch(ctx: ChunkContext, rows: ChunkRow[], cursor: number): Promise<{ committed: number; paused: boolean; waiting: boolean }> {
  const { deps, job, chunk, lookups, retry } = ctx;
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
  // In a retry pass, a lookup that answered a row before keeps its cells; only failed ones are redone.
  const previous = retry && rows.map((_, i) => retry.order[cursor + i]!);
  const redo = (i: number, l: number): boolean => previous === undefined || lookups.length === 1 || (retry!.flags[previous[i]!]! & lookupErrorFlag(l)) !== 0;

  const plans = await Promise.all(
    lookups.map(async (lookup, l) => {
      const firstKeys: string[] = [];
      const allKeys = new Set<string>();
      rows.forEach((row, i) => {
        const key = rowKey(row, l);
        if (!redo(i, l) || key.kind === ROW_KINDS.invalid) return;
        if (key.kind === ROW_KINDS.lookup) firstKeys.push(key.value);
        allKeys.add(key.value);
      });
      const [billed, cached] = await Promise.all([
        deps.billing.freshlyBilled(job.accountId, lookup.kind, firstKeys, since),
        lookup.provider.answersLocally || job.options.fresh === true ? new Map<string, unknown>() : deps.results.getMany<unknown>(lookup.kind, [...allKeys], since),
      ]);
      return { lookup, billed, cached };
    }),
  );

  // Reserve before looking up: rows this account cannot pay for are not looked up at all.
  const units = rows.map((row, i) =>
    plans.reduce((n, { billed }, l) => {
      const key = rowKey(row, l);
      return n + (redo(i, l) && key.kind === ROW_KINDS.lookup && !billed.has(key.value) ? 1 : 0);
    }, 0),
  );
  const wanted = units.reduce((a, b) => a + b, 0);
  const granted = wanted === 0 ? 0 : await deps.billing.reserve(job.accountId, job.id, chunk.chunkIndex, wanted);
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

  if (answers.some((a) => [...a.values()].some((o) => !o.ok && o.code === ERROR_CODES.providerUnavailable))) return pauseForProvider(ctx);
  const outcomes = plans.map(({ cached }, l) => todo.map((row, i) => (redo(i, l) ? outcomeOf(rowKey(row, l), cached, answers[l]!) : undefined)));
  // Only first occurrences that were answered are billable; the rest are free by rule.
  const items: BillableItem[] = [];
  todo.forEach((row, i) => {
    plans.forEach((_, l) => {
      const key = rowKey(row, l);
      if (redo(i, l) && key.kind === ROW_KINDS.lookup && outcomes[l]![i]?.ok) items.push({ kind: l, key: key.value, row: i });
    });
  });

  let billed: { has(key: string): boolean }[] = plans.map((p) => p.billed);
  // The reservation already holds what `todo` can cost; the balance is checked in the checkpoint.
  let balance = Number.POSITIVE_INFINITY;
  for (let attempt = 1; attempt <= MAX_COMMIT_ATTEMPTS; attempt++) {
    const charge = planCharges(lookups.length, items, billed, balance);
    const now = deps.clock.now();
    const batch = renderBatch(ctx, todo, { plans, outcomes, charge, redo, previous, now });
    const endCheckpoint = deps.metrics.checkpointDuration.startTimer();
    const result = await deps.jobs.commitBatch({
      jobId: job.id,
      accountId: job.accountId,
      chunkIndex: chunk.chunkIndex,
      lease: ctx.lease,
      cursor,
      rows: batch.rows,
      output: batch.output,
      counters: batch.counters,
      charges: {
        kinds: lookups.map((l) => l.kind),
        keys: charge.charged.map((keys) => [...keys]),
        // A retry pass redoes rows under cursors the first pass used: its batches get ids of their own.
        batchId: chunk.pass === 0 ? `${chunk.chunkIndex}:${cursor}` : `${chunk.chunkIndex}:${cursor}:pass${chunk.pass}`,
        since,
      },
      cache: batch.cache,
      // Rows a deferred pass will try again are not failures yet: the budget waits for the last pass.
      ...(batch.counters.error > 0 && job.options.maxErrorRate !== undefined && deferredRetryAt(ctx, now) === undefined ? { errorBudget: { maxErrorRate: job.options.maxErrorRate, message: budgetMessage(job) } } : {}),
      outOfCredits: batch.rows < rows.length,
      now,
    });
    endCheckpoint();
    if (result.ok) {
      countCommitted(deps, job.type, batch.statuses, batch.counters.credits);
      if (result.failed) deps.log.warn({ jobId: job.id, accountId: job.accountId, reason: ERROR_CODES.errorBudgetExceeded }, 'job failed: failure budget exceeded');
      else if (result.paused && batch.rows < rows.length) deps.log.info({ jobId: job.id, accountId: job.accountId, chunk: chunk.chunkIndex, reason: PAUSE_REASONS.insufficientCredits }, 'job paused: out of credits');
      // Cut short by credits other chunks hold: they commit or give them back soon. The chunk hands
      // its worker slot over meanwhile, so that a chunk holding credits is never kept from a slot.
      const waiting = !result.paused && batch.rows < rows.length;
      if (waiting) await sleep(CREDIT_WAIT_MS, ctx.signal);
      return { committed: batch.rows, paused: result.paused, waiting };
    }
    const known = billed;
    billed = result.billed.map((billedMeanwhile, k) => ({ has: (key: string) => billedMeanwhile.has(key) || known[k]!.has(key) }));
    balance = result.balance;
  }
  throw new AppError(ERROR_CODES.internal, `batch at ${cursor} of chunk ${chunk.chunkIndex} of ${job.id}: its charges changed under it ${MAX_COMMIT_ATTEMPTS} times`, { retryable: true });
}

interface RenderInput {
  plans: readonly { lookup: ActiveLookup; cached: Map<string, unknown> }[];
  outcomes: readonly (readonly (LookupOutcome<unknown> | undefined)[])[];
  charge: ChargePlan;
  redo: (i: number, l: number) => boolean;
  previous: readonly number[] | undefined;
  now: number;
}

/** The rows the plan pays for, rendered, with their counters and the answers to cache. */
function renderBatch(ctx: ChunkContext, todo: readonly ChunkRow[], input: RenderInput) {
  const { plans, outcomes, charge, redo, previous } = input;
  const { retry } = ctx;
  const stopAt = charge.unpaidRow ?? todo.length;
  const counters: RowCounters = { processed: stopAt, found: 0, invalid: 0, duplicate: 0, error: 0, credits: charge.total };
  const output: BatchOutput = { allText: '', rowEnds: Buffer.alloc(stopAt * 4), rowFlags: Buffer.alloc(stopAt) };
  const cache: { kind: string; key: string; result: unknown }[] = [];
  const statuses: Record<RowStatus, number> = { ok: 0, invalid: 0, duplicate: 0, error: 0 };
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
      if (redo(i, l) && key.kind === ROW_KINDS.lookup && outcome?.ok && !cached.has(key.value) && !lookup.provider.answersLocally) {
        cache.push({ kind: lookup.kind, key: key.value, result: outcome.result });
      }
    });
    statuses[rendered.status]++;
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
  return { rows: stopAt, output, counters, cache, statuses };
}

/**
 * After the checkpoint committed, from what it committed: a checkpoint refused for a conflict wrote
 * nothing, so counting before it (or counting what was planned) would overstate credits. One
 * increment per status per batch keeps the hot path free of per-row work.
 */
function countCommitted(deps: EngineDeps, type: string, statuses: Record<RowStatus, number>, credits: number): void {
  for (const [status, n] of Object.entries(statuses)) if (n > 0) deps.metrics.rowsProcessed.inc({ type, status }, n);
  if (credits > 0) deps.metrics.creditsCharged.inc(credits);
}

/**
 * A provider that is down would turn every row into an error; instead the batch commits nothing
 * and the job pauses, to be resumed by a worker once the wait is over. The batch is then redone
 * from the same cursor, exactly as if this attempt had never happened.
 */
async function pauseForProvider(ctx: ChunkContext): Promise<{ committed: number; paused: boolean; waiting: boolean }> {
  const { deps, job, chunk } = ctx;
  await deps.jobs.pauseForProvider(job.id, chunk.chunkIndex, 'the lookup provider is unavailable; the job resumes on its own', deps.clock.now());
  deps.log.warn({ jobId: job.id, accountId: job.accountId, chunk: chunk.chunkIndex, reason: PAUSE_REASONS.providerUnavailable }, 'lookup provider unavailable; job paused');
  return { committed: 0, paused: true, waiting: false };
}

/**
 * Why a job failed when more rows failed than its budget allows: it fails inside the checkpoint
 * that crossed the line, keeping every committed row, and `retry-failed` redoes them.
 */
function budgetMessage(job: JobRecord): string {
  const rate = job.options.maxErrorRate ?? 0;
  return `more than ${Math.floor(rate * (job.totalRows ?? 0))} rows (${rate * 100}% of ${job.totalRows}) failed; retry them with \`sluice jobs retry-failed ${job.id}\``;
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

