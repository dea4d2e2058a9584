import { pipelineFor } from '../../pipelines/index.js';
import type { NormaliseOptions, Pipeline } from '../../pipelines/pipeline.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { chunkObjectKey, encodeChunkRow, ROW_KINDS } from './chunk-format.js';
import { readCsvRows } from './csv-reader.js';
import type { EngineDeps } from './engine-deps.js';
import type { JobRecord, Lease } from './job-store.js';
import { KeySet } from './key-set.js';

interface KeyColumn {
  header: string[];
  index: number;
  /** A file with no header row: its first row is data. */
  firstRowIsData: boolean;
}

/**
 * Reads the whole input once: strict decoding, parsing, validation, in-file dedupe, and chunk
 * objects. Nothing is charged here, so a file rejected at any point (bad bytes, too many rows)
 * costs nothing. A split that dies is simply run again from the start: it is deterministic and
 * overwrites the same chunk objects.
 */
export async function splitJob(deps: EngineDeps, job: JobRecord, lease: Lease, signal: AbortSignal): Promise<void> {
  const { limits } = deps;
  const pipeline = pipelineFor(job.type);
  const normaliseOptions: NormaliseOptions = { defaultCountry: job.options.defaultCountry };
  const seen = new KeySet();
  const chunks: { firstRow: number; rowCount: number }[] = [];
  let keyColumn: KeyColumn | undefined;
  let lines: string[] = [];
  let totalRows = 0;
  let width = 0;
  let pendingPut: Promise<unknown> = Promise.resolve();

  const flush = async (): Promise<void> => {
    if (lines.length === 0) return;
    const index = chunks.length;
    chunks.push({ firstRow: totalRows - lines.length, rowCount: lines.length });
    const body = lines.join('\n') + '\n';
    lines = [];
    // One upload in flight while the next chunk is parsed; memory stays at about two chunks.
    await pendingPut;
    pendingPut = deps.objects.putBytes(chunkObjectKey(job.id, index), body, { contentType: 'application/x-ndjson', signal });
    // Its failure surfaces at the next await; if the split throws first, it must not go unhandled.
    pendingPut.catch(() => undefined);
  };

  const input = await deps.objects.getStream(job.inputKey, undefined, signal);
  for await (const batch of readCsvRows(input, { maxLineBytes: limits.maxLineBytes }, signal)) {
    for (const cells of batch) {
      if (keyColumn === undefined) {
        keyColumn = findKeyColumn(cells, pipeline, job.options.column, normaliseOptions);
        if (!keyColumn.firstRowIsData) continue;
      }
      totalRows++;
      if (cells.length > width) width = cells.length;
      if (totalRows > limits.maxRows) {
        throw new AppError(ERROR_CODES.tooManyRows, `the file has more than ${limits.maxRows} rows`, {
          details: { maxRows: limits.maxRows },
        });
      }
      const normalised = pipeline.normalise(cells[keyColumn.index] ?? '', normaliseOptions);
      if (!normalised.ok) {
        lines.push(encodeChunkRow(ROW_KINDS.invalid, normalised.code, cells));
      } else {
        const kind = seen.add(normalised.key) ? ROW_KINDS.lookup : ROW_KINDS.duplicate;
        lines.push(encodeChunkRow(kind, normalised.key, cells));
      }
      if (lines.length === limits.chunkRows) await flush();
    }
  }
  if (keyColumn === undefined) throw new AppError(ERROR_CODES.noRows, 'the file has no rows');
  if (totalRows === 0) throw new AppError(ERROR_CODES.noRows, 'the file has a header row but no data rows');
  await flush();
  await pendingPut;

  deps.jobs.finishSplit(job.id, lease, { header: widen(keyColumn.header, width), keyColumn: keyColumn.index, totalRows, chunks }, deps.clock.now());
  deps.log.info({ jobId: job.id, rows: totalRows, chunks: chunks.length, duplicates: totalRows - seen.size }, 'job split');
}

/**
 * Rows longer than the header keep their extra cells under `column_N` names, so that every output
 * row has the same width and the result columns line up.
 */
function widen(header: string[], width: number): string[] {
  if (header.length >= width) return header;
  return [...header, ...Array.from({ length: width - header.length }, (_, i) => `column_${header.length + i + 1}`)];
}

/**
 * The key column is the header the caller named, else the pipeline's own header (`email`), else,
 * when the first row's first cell is itself a valid key, column 1 of a file with no header row.
 */
export function findKeyColumn(firstRow: string[], pipeline: Pipeline, column: string | undefined, options: NormaliseOptions = {}): KeyColumn {
  const wanted = (column ?? pipeline.keyHeader).trim().toLowerCase();
  const index = firstRow.findIndex((cell) => cell.trim().toLowerCase() === wanted);
  if (index >= 0) return { header: firstRow, index, firstRowIsData: false };
  if (column !== undefined) {
    throw new AppError(ERROR_CODES.columnNotFound, `no column named "${column}" in the header row`, { details: { column } });
  }
  if (pipeline.headerless && pipeline.normalise(firstRow[0] ?? '', options).ok) {
    const header = firstRow.map((_, i) => (i === 0 ? pipeline.keyHeader : `column_${i + 1}`));
    return { header, index: 0, firstRowIsData: true };
  }
  throw new AppError(
    ERROR_CODES.noKeyColumn,
    pipeline.headerless
      ? `no "${pipeline.keyHeader}" column in the header row, and the first column holds no ${pipeline.keyHeader}`
      : `no "${pipeline.keyHeader}" column in the header row; name the key column with --column (column= in the API)`,
  );
}
