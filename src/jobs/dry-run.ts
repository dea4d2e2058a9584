import { jobLookups } from '../../pipelines/index.js';
import { DAY_MS } from '../shared/clock.js';
import type { JobOptions } from '../storage/job-records.js';
import { ROW_KINDS } from './chunk-format.js';
import { classifiedInput, classifyRows } from './classify-rows.js';
import type { EngineDeps } from './engine-deps.js';

/** Keys per billing-cache read: one query's parameter list, never the file's whole key set. */
export const DRY_RUN_BILLED_BATCH = 1_000;

/** What a job on this file would do, as the API answers it (snake_case, spec style). */
export interface DryRunEstimate {
  dry_run: true;
  /** Data rows (the header row not counted). */
  rows: number;
  /** Rows with at least one valid key: `rows` = `valid` + `invalid`. */
  valid: number;
  invalid: number;
  /** Valid rows whose every valid key repeats an earlier row's: free, answered from that row. */
  duplicates: number;
  /** Distinct keys (per lookup) this account paid for within the repeat-free window: free again. */
  repeats: number;
  /** One credit per distinct valid key and lookup not yet paid for: what the job would charge at most. */
  credits_needed: number;
  balance: number;
  /** The balance less what running jobs have set aside. */
  available: number;
  /** Invalid rows by the error code of their first lookup's key. */
  invalid_by_code: Record<string, number>;
}

/**
 * Reads a file as its job would (classifyRows, the split's own reading) and counts what the job
 * would charge, without making a job, charging, or writing anything. Repeats are asked of the
 * billing cache in batches of DRY_RUN_BILLED_BATCH first occurrences, as they are met; so memory
 * is the dedupe sets (16 bytes per distinct key and lookup: about 32 MB at a million) plus one
 * batch, whatever the file's size. Throws the `AppError` the job would fail with.
 */
export async function estimateJob(
  deps: Pick<EngineDeps, 'billing' | 'clock' | 'limits' | 'repeatFreeDays'>,
  job: { accountId: string; type: string; options: JobOptions },
  input: AsyncIterable<Buffer | Uint8Array>,
  signal?: AbortSignal,
): Promise<DryRunEstimate> {
  const lookups = jobLookups(job.type, job.options);
  const kinds = lookups.map((l) => l.pipeline.lookupKind);
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
  const pending: string[][] = lookups.map(() => []);
  const figures = { valid: 0, invalid: 0, duplicates: 0, repeats: 0, firsts: 0 };
  const invalidByCode: Record<string, number> = {};

  const askBilled = async (l: number): Promise<void> => {
    const keys = pending[l]!;
    pending[l] = [];
    for (let at = 0; at < keys.length; at += DRY_RUN_BILLED_BATCH) {
      const slice = keys.slice(at, at + DRY_RUN_BILLED_BATCH);
      figures.repeats += (await deps.billing.freshlyBilled(job.accountId, kinds[l]!, slice, since)).size;
    }
  };

  const read = classifiedInput(lookups);
  for await (const rows of classifyRows(input, { options: job.options, lookups }, deps.limits, read, signal)) {
    for (const { keys } of rows) {
      // A row's status follows render-row: ok if any lookup has a first occurrence, else duplicate, else invalid.
      if (keys.some((k) => k.kind === ROW_KINDS.lookup)) figures.valid++;
      else if (keys.some((k) => k.kind === ROW_KINDS.duplicate)) {
        figures.valid++;
        figures.duplicates++;
      } else {
        figures.invalid++;
        const code = keys[0]!.value;
        invalidByCode[code] = (invalidByCode[code] ?? 0) + 1;
      }
      keys.forEach((k, l) => {
        if (k.kind !== ROW_KINDS.lookup) return;
        figures.firsts++;
        pending[l]!.push(k.value);
      });
    }
    for (let l = 0; l < lookups.length; l++) if (pending[l]!.length >= DRY_RUN_BILLED_BATCH) await askBilled(l);
  }
  for (let l = 0; l < lookups.length; l++) await askBilled(l);

  const { credits, reserved } = await deps.billing.balance(job.accountId);
  return {
    dry_run: true,
    rows: read.totalRows,
    valid: figures.valid,
    invalid: figures.invalid,
    duplicates: figures.duplicates,
    repeats: figures.repeats,
    credits_needed: figures.firsts - figures.repeats,
    balance: credits,
    available: credits - reserved,
    invalid_by_code: invalidByCode,
  };
}
