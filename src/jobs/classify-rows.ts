import type { JobLookup } from '../../pipelines/index.js';
import type { NormaliseOptions } from '../../pipelines/pipeline.js';
import type { JobLimits } from '../config/load-config.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { JobOptions } from '../storage/job-records.js';
import { ROW_KINDS, type RowKey } from './chunk-format.js';
import { readCsvRows } from './csv-reader.js';
import { findKeyColumns, type KeyColumn } from './key-columns.js';
import { KeySet } from './key-set.js';
import { CountryTally, findCountryColumn } from './row-country.js';

/** A row over SLUICE_MAX_CELLS_PER_ROW, as every lookup sees it. */
const TOO_WIDE: RowKey = { kind: ROW_KINDS.invalid, value: ERROR_CODES.rowTooWide };

/** One data row as every lookup reads it, and the cells a chunk keeps of it. */
export interface ClassifiedRow {
  keys: RowKey[];
  cells: string[];
}

/** What the reading learnt about the file, filled in as the rows go by. */
export interface ClassifiedInput {
  keyColumn: KeyColumn | undefined;
  /** The widest row's cell count (rows over the cell cap excepted). */
  width: number;
  totalRows: number;
  countries: CountryTally;
  /** In-file dedupe, per lookup: a row may repeat an earlier row's email and still be the first of its company. */
  seen: KeySet[];
}

export function classifiedInput(lookups: readonly JobLookup[]): ClassifiedInput {
  return { keyColumn: undefined, width: 0, totalRows: 0, countries: new CountryTally(), seen: lookups.map(() => new KeySet()) };
}

/**
 * Reads an input the one way both a job's split and a dry run read it: strict decoding, the
 * delimiter, the key columns, the row and cell caps, normalisation and in-file dedupe. Yields the
 * rows a CSV batch at a time, so a dry run can never count a file differently from how its job
 * would split it. Throws the `AppError` the job would fail with (`no_rows`, `too_many_rows`, ...).
 * Memory: the dedupe sets (16 bytes per distinct key, see KeySet) and one batch of rows.
 */
export async function* classifyRows(
  input: AsyncIterable<Buffer | Uint8Array>,
  job: { options: JobOptions; lookups: readonly JobLookup[] },
  limits: Pick<JobLimits, 'maxRows' | 'maxLineBytes' | 'maxCellsPerRow'>,
  state: ClassifiedInput,
  signal?: AbortSignal,
): AsyncGenerator<ClassifiedRow[]> {
  const { lookups, options } = job;
  const normaliseOptions: NormaliseOptions = { defaultCountry: options.defaultCountry };
  let keyIndexes: number[] = [];
  let countryIndex: number | undefined;
  for await (const batch of readCsvRows(input, { maxLineBytes: limits.maxLineBytes, delimiter: options.delimiter, encoding: options.encoding }, signal)) {
    const rows: ClassifiedRow[] = [];
    for (const cells of batch) {
      if (state.keyColumn === undefined) {
        // Every output row is as wide as the header: a wide one would make every row wide.
        if (cells.length > limits.maxCellsPerRow) {
          throw new AppError(ERROR_CODES.tooManyColumns, `the header row has ${cells.length} cells, more than the ${limits.maxCellsPerRow} a row may have`, {
            details: { cells: cells.length, maxCellsPerRow: limits.maxCellsPerRow },
          });
        }
        state.keyColumn = findKeyColumns(cells, lookups, normaliseOptions);
        keyIndexes = state.keyColumn.indexes;
        countryIndex = findCountryColumn(state.keyColumn.firstRowIsData ? undefined : cells, options.countryColumn);
        if (!state.keyColumn.firstRowIsData) continue;
      }
      state.totalRows++;
      if (state.totalRows > limits.maxRows) {
        throw new AppError(ERROR_CODES.tooManyRows, `the file has more than ${limits.maxRows} rows`, { details: { maxRows: limits.maxRows } });
      }
      if (cells.length > limits.maxCellsPerRow) {
        // Kept only as wide as the header: one hostile row must not widen every output row, nor
        // carry thousands of cells into the batches that render it.
        rows.push({ keys: lookups.map(() => TOO_WIDE), cells: cells.slice(0, state.keyColumn.header.length) });
        continue;
      }
      if (cells.length > state.width) state.width = cells.length;
      const rowOptions = countryIndex === undefined ? normaliseOptions : { ...normaliseOptions, rowCountry: cells[countryIndex] ?? '' };
      const keys: RowKey[] = lookups.map(({ pipeline }, l) => {
        const normalised = pipeline.normalise(cells[keyIndexes[l]!] ?? '', rowOptions);
        if (!normalised.ok) return { kind: ROW_KINDS.invalid, value: normalised.code };
        if (normalised.origin !== undefined) state.countries.add(normalised.origin);
        return { kind: state.seen[l]!.add(normalised.key) ? ROW_KINDS.lookup : ROW_KINDS.duplicate, value: normalised.key };
      });
      rows.push({ keys, cells });
    }
    if (rows.length > 0) yield rows;
  }
  if (state.keyColumn === undefined) throw new AppError(ERROR_CODES.noRows, 'the file has no rows');
  if (state.totalRows === 0) throw new AppError(ERROR_CODES.noRows, 'the file has a header row but no data rows');
}
