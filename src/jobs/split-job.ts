import { jobLookups } from '../../pipelines/index.js';
import { ChunkBodyBuilder, chunkObjectKey, encodeChunkRow } from './chunk-format.js';
import { classifiedInput, classifyRows } from './classify-rows.js';
import type { EngineDeps } from './engine-deps.js';
import type { JobRecord, Lease } from '../storage/job-records.js';

/**
 * Reads the whole input once: strict decoding, parsing, validation, in-file dedupe, and chunk
 * objects. Nothing is charged here, so a file rejected at any point (bad bytes, too many rows)
 * costs nothing. A split that dies is simply run again from the start: it is deterministic and
 * overwrites the same chunk objects.
 */
export async function splitJob(deps: EngineDeps, job: JobRecord, lease: Lease, signal: AbortSignal): Promise<void> {
  const { limits } = deps;
  const lookups = jobLookups(job.type, job.options);
  const read = classifiedInput(lookups);
  const chunks: { firstRow: number; rowCount: number }[] = [];
  const body = new ChunkBodyBuilder();
  let rowsSeen = 0;
  let pendingPut: Promise<unknown> = Promise.resolve();

  const flush = async (): Promise<void> => {
    if (body.rows === 0) return;
    const index = chunks.length;
    chunks.push({ firstRow: rowsSeen - body.rows, rowCount: body.rows });
    const bytes = body.take();
    // One upload in flight while the next chunk is parsed; memory stays at about two chunks.
    await pendingPut;
    pendingPut = deps.objects.putBytes(chunkObjectKey(job.id, index), bytes, { contentType: 'application/x-ndjson', signal });
    // Its failure surfaces at the next await; if the split throws first, it must not go unhandled.
    pendingPut.catch(() => undefined);
  };

  const input = await deps.objects.getStream(job.inputKey, undefined, signal);
  for await (const rows of classifyRows(input, { options: job.options, lookups }, limits, read, signal)) {
    for (const row of rows) {
      rowsSeen++;
      body.append(encodeChunkRow(row.keys, row.cells));
      // Bytes too: 25,000 rows of up to SLUICE_MAX_LINE_BYTES each could make a 1.6 GB chunk, held whole by the split and by its worker.
      if (body.rows === limits.chunkRows || body.bytes >= limits.chunkBytes) await flush();
    }
  }
  await flush();
  await pendingPut;

  const keyColumn = read.keyColumn!;
  await deps.jobs.finishSplit(
    job.id,
    lease,
    { header: widen(keyColumn.header, read.width), keyColumn: keyColumn.indexes[0]!, totalRows: read.totalRows, chunks, countries: read.countries.result() },
    deps.clock.now(),
  );
  deps.log.info({ jobId: job.id, rows: read.totalRows, chunks: chunks.length, distinct: read.seen.map((s) => s.size) }, 'job split');
}

/**
 * Rows longer than the header keep their extra cells under `column_N` names, so that every output
 * row has the same width and the result columns line up.
 */
function widen(header: string[], width: number): string[] {
  if (header.length >= width) return header;
  return [...header, ...Array.from({ length: width - header.length }, (_, i) => `column_${header.length + i + 1}`)];
}
