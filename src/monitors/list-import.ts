import { ROW_KINDS } from '../jobs/chunk-format.js';
import { classifiedInput, classifyRows } from '../jobs/classify-rows.js';
import type { JobLimits } from '../config/load-config.js';
import type { JobOptions } from '../storage/job-records.js';
import type { TargetListRecord } from '../storage/monitor-records.js';
import type { ObjectStore } from '../storage/s3/object-store.js';
import type { MonitorsPort } from '../storage/store.js';
import { MONITOR_TYPE_SPECS } from './monitor-types.js';
import { InvalidTally, type InvalidTargets } from './target-input.js';

/** Targets written per transaction: big enough to be quick, small enough not to hold the writer for long. */
const IMPORT_BATCH = 5_000;

/** How to read a list's CSV: the bulk job's own input options. */
export type ListCsvOptions = Pick<JobOptions, 'column' | 'defaultCountry' | 'countryColumn' | 'delimiter' | 'encoding'>;

export interface ImportedList {
  list: TargetListRecord;
  invalid: InvalidTargets;
}

/**
 * Fills an importing list from its CSV in the object store, read streaming exactly as a bulk job
 * of the type reads its input (`classifyRows`: strict decoding, key column by header or alias, row
 * limits, normalisation, in-file dedupe), and makes it ready with its counts. Memory is one CSV
 * batch, one write batch and the dedupe set (16 bytes a key), never the file. A file the job would
 * refuse throws that job's error; the caller drops the list.
 */
export async function importListCsv(
  deps: {
    monitors: MonitorsPort;
    objects: ObjectStore;
    limits: Pick<JobLimits, 'maxRows' | 'maxLineBytes' | 'maxCellsPerRow'>;
    /** Throws when the list, holding `holding` targets, may not take `adding` more (the account's quotas). */
    guard?: ((holding: number, adding: number) => Promise<void>) | undefined;
  },
  list: TargetListRecord,
  options: ListCsvOptions,
  signal?: AbortSignal,
): Promise<ImportedList> {
  const spec = MONITOR_TYPE_SPECS[list.type];
  const state = classifiedInput([{ pipeline: spec.reading, column: options.column }]);
  const input = await deps.objects.getStream(list.sourceKey!, undefined, signal);
  const invalid = new InvalidTally();
  let duplicates = 0;
  let row = 0;
  let pending: string[] = [];
  let holding = 0;
  const flush = async () => {
    if (pending.length > 0) {
      await deps.guard?.(holding, pending.length);
      holding += await deps.monitors.addListTargets(list.id, pending);
    }
    pending = [];
  };
  for await (const rows of classifyRows(input, { options, lookups: [{ pipeline: spec.reading, column: options.column }] }, deps.limits, state, signal)) {
    const keyIndex = state.keyColumn!.indexes[0]!;
    for (const { keys, cells } of rows) {
      row++;
      const key = keys[0]!;
      if (key.kind === ROW_KINDS.invalid) invalid.add(row, cells[keyIndex] ?? '', key.value);
      else if (key.kind === ROW_KINDS.duplicate) duplicates++;
      else pending.push(key.value);
    }
    if (pending.length >= IMPORT_BATCH) await flush();
  }
  await flush();
  const finished = await deps.monitors.finishList(list.id, { invalidCount: invalid.count, duplicateCount: duplicates, invalidByCode: invalid.byCode });
  return { list: finished, invalid };
}
