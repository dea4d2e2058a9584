import { jobLookups } from '../../pipelines/index.js';
import type { NormaliseOptions } from '../../pipelines/pipeline.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { ChunkBodyBuilder, chunkObjectKey, encodeChunkRow, ROW_KINDS, type RowKey } from './chunk-format.js';
import { readCsvRows } from './csv-reader.js';
import type { EngineDeps } from './engine-deps.js';
import { findKeyColumns, type KeyColumn } from './key-columns.js';
import type { JobRecord, Lease } from '../storage/job-records.js';
import { KeySet } from './key-set.js';
import { CountryTally, findCountryColumn } from './row-country.js';

/** A row over SLUICE_MAX_CELLS_PER_ROW, as every lookup sees it. */
const TOO_WIDE: RowKey = { kind: ROW_KINDS.invalid, value: ERROR_CODES.rowTooWide };

/**
 * Reads the whole input once: strict decoding, parsing, validation, in-file dedupe, and chunk
 * objects. Nothing is charged here, so a file rejected at any point (bad bytes, too many rows)
 * costs nothing. A split that dies is simply run again from the start: it is deterministic and
 * overwrites the same chunk objects.
 */
export async function splitJob(deps: EngineDeps, job: JobRecord, lease: Lease, signal: AbortSignal): Promise<void> {
  const { limits } = deps;
  const lookups = jobLookups(job.type, job.options);
  const normaliseOptions: NormaliseOptions = { defaultCountry: job.options.defaultCountry };
  // In-file dedupe is per lookup: a row may repeat an earlier row's email and still be the first of its company.
  const seen = lookups.map(() => new KeySet());
  const chunks: { firstRow: number; rowCount: number }[] = [];
  let keyColumn: KeyColumn | undefined;
  let keyIndexes: number[] = [];
  let countryIndex: number | undefined;
  const countries = new CountryTally();
  const body = new ChunkBodyBuilder();
  let totalRows = 0;
  let width = 0;
  let pendingPut: Promise<unknown> = Promise.resolve();

  const flush = async (): Promise<void> => {
    if (body.rows === 0) return;
    const index = chunks.length;
    chunks.push({ firstRow: totalRows - body.rows, rowCount: body.rows });
    const bytes = body.take();
    // One upload in flight while the next chunk is parsed; memory stays at about two chunks.
    await pendingPut;
    pendingPut = deps.objects.putBytes(chunkObjectKey(job.id, index), bytes, { contentType: 'application/x-ndjson', signal });
    // Its failure surfaces at the next await; if the split throws first, it must not go unhandled.
    pendingPut.catch(() => undefined);
  };

  const input = await deps.objects.getStream(job.inputKey, undefined, signal);
  for await (const batch of readCsvRows(input, { maxLineBytes: limits.maxLineBytes, delimiter: job.options.delimiter, encoding: job.options.encoding }, signal)) {
    for (const cells of batch) {
      if (keyColumn === undefined) {
        // Every output row is as wide as the header: a wide one would make every row wide.
        if (cells.length > limits.maxCellsPerRow) {
          throw new AppError(ERROR_CODES.tooManyColumns, `the header row has ${cells.length} cells, more than the ${limits.maxCellsPerRow} a row may have`, {
            details: { cells: cells.length, maxCellsPerRow: limits.maxCellsPerRow },
          });
        }
        keyColumn = findKeyColumns(cells, lookups, normaliseOptions);
        keyIndexes = keyColumn.indexes;
        countryIndex = findCountryColumn(keyColumn.firstRowIsData ? undefined : cells, job.options.countryColumn);
        if (!keyColumn.firstRowIsData) continue;
      }
      totalRows++;
      if (totalRows > limits.maxRows) {
        throw new AppError(ERROR_CODES.tooManyRows, `the file has more than ${limits.maxRows} rows`, {
          details: { maxRows: limits.maxRows },
        });
      }
      if (cells.length > limits.maxCellsPerRow) {
        // Kept only as wide as the header: one hostile row must not widen every output row, nor
        // carry thousands of cells into the batches that render it.
        body.append(encodeChunkRow(lookups.map(() => TOO_WIDE), cells.slice(0, keyColumn.header.length)));
      } else {
        if (cells.length > width) width = cells.length;
        const rowOptions = countryIndex === undefined ? normaliseOptions : { ...normaliseOptions, rowCountry: cells[countryIndex] ?? '' };
        const keys: RowKey[] = lookups.map(({ pipeline }, l) => {
          const normalised = pipeline.normalise(cells[keyIndexes[l]!] ?? '', rowOptions);
          if (!normalised.ok) return { kind: ROW_KINDS.invalid, value: normalised.code };
          if (normalised.origin !== undefined) countries.add(normalised.origin);
          return { kind: seen[l]!.add(normalised.key) ? ROW_KINDS.lookup : ROW_KINDS.duplicate, value: normalised.key };
        });
        body.append(encodeChunkRow(keys, cells));
      }
      // Bytes too: 25,000 rows of up to SLUICE_MAX_LINE_BYTES each could make a 1.6 GB chunk, held whole by the split and by its worker.
      if (body.rows === limits.chunkRows || body.bytes >= limits.chunkBytes) await flush();
    }
  }
  if (keyColumn === undefined) throw new AppError(ERROR_CODES.noRows, 'the file has no rows');
  if (totalRows === 0) throw new AppError(ERROR_CODES.noRows, 'the file has a header row but no data rows');
  await flush();
  await pendingPut;

  await deps.jobs.finishSplit(job.id, lease, { header: widen(keyColumn.header, width), keyColumn: keyColumn.indexes[0]!, totalRows, chunks, countries: countries.result() }, deps.clock.now());
  deps.log.info({ jobId: job.id, rows: totalRows, chunks: chunks.length, distinct: seen.map((s) => s.size) }, 'job split');
}

/**
 * Rows longer than the header keep their extra cells under `column_N` names, so that every output
 * row has the same width and the result columns line up.
 */
function widen(header: string[], width: number): string[] {
  if (header.length >= width) return header;
  return [...header, ...Array.from({ length: width - header.length }, (_, i) => `column_${header.length + i + 1}`)];
}
