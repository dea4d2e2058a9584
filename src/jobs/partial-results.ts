import { Readable } from 'node:stream';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { flaggedText, ROW_FLAGS, type ChunkRecord, type JobRecord } from '../storage/job-records.js';
import { JOB_STATUSES, type ExportFilter, type JobStatus } from '../storage/job-states.js';
import { resultHeader } from './assemble-job.js';
import { partObjectKey } from './chunk-format.js';
import { csvRecords } from './csv-writer.js';
import type { EngineDeps } from './engine-deps.js';

/** Jobs whose processed rows may be read before (or instead of) their result files. */
export const PARTIAL_STATUSES: ReadonlySet<JobStatus> = new Set([JOB_STATUSES.running, JOB_STATUSES.paused, JOB_STATUSES.cancelled, JOB_STATUSES.failed]);

export interface PartialResult {
  /** Input rows the file covers (in `found` and `errors`, the rows among them that the filter keeps). */
  rowsIncluded: number;
  totalRows: number;
  /** `<job>-<filter>.partial.csv`: never the name of a complete result. */
  fileName: string;
  body: Readable;
}

/** Where a chunk's committed rows are read from, fixed when the download starts. */
interface ChunkSource {
  chunk: ChunkRecord;
  /** `part`: the chunk's part object (done, or a retry pass over a done chunk); `outputs`: its committed batches. */
  from: 'part' | 'outputs';
  rows: number;
}

/**
 * Every committed row of an unfinished job, in input order: the result header, then per chunk its
 * part object when the chunk is done, else its committed batches up to the cursor read at the
 * start. A batch is committed whole (one checkpoint), so no row is ever half there. Chunks run
 * side by side, so a later chunk may be done while an earlier one is not: the file then has gaps,
 * and is always a subsequence of the complete file, each row byte-identical to its line there.
 * Streamed, never stored: a running job's partial file is stale a second later.
 */
export async function openPartialResult(deps: EngineDeps, job: JobRecord, filter: ExportFilter, signal?: AbortSignal): Promise<PartialResult> {
  if (!PARTIAL_STATUSES.has(job.status) || job.header === null) {
    throw new AppError(
      ERROR_CODES.invalidState,
      job.header === null ? `job ${job.id} is ${job.status} and has no processed rows yet` : `job ${job.id} is ${job.status}; partial results are for running, paused, cancelled or failed jobs`,
      { statusCode: 409 },
    );
  }
  const sources: ChunkSource[] = [];
  for (const chunk of [...(await deps.jobs.chunks(job.id))].sort((a, b) => a.chunkIndex - b.chunkIndex)) {
    if (chunk.status === 'done' || chunk.pass > 0) sources.push({ chunk, from: 'part', rows: chunk.rowCount });
    else if (chunk.cursor > 0) sources.push({ chunk, from: 'outputs', rows: chunk.cursor });
  }
  return {
    rowsIncluded: sources.reduce((n, s) => n + s.rows, 0),
    totalRows: job.totalRows ?? 0,
    fileName: `${job.id}-${filter}.partial.csv`,
    body: Readable.from(partialBody(deps, job, filter, sources, signal)),
  };
}

async function* partialBody(deps: EngineDeps, job: JobRecord, filter: ExportFilter, sources: ChunkSource[], signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  yield Buffer.from(resultHeader(job));
  for (const source of sources) {
    const { chunkIndex } = source.chunk;
    if (source.from === 'part') {
      for await (const piece of await deps.objects.getStream(partObjectKey(job.id, chunkIndex, filter), undefined, signal)) yield piece as Buffer;
      continue;
    }
    let read = 0;
    for await (const output of deps.jobs.outputs(job.id, chunkIndex)) {
      if (read >= source.rows) break;
      read += output.rowFlags.length;
      yield Buffer.from(filter === 'all' ? output.allText : flaggedText(output, filter === 'found' ? ROW_FLAGS.found : ROW_FLAGS.error));
    }
    // The chunk was finished meanwhile, which drops its batches: the rest is in its new part.
    if (read < source.rows) yield Buffer.from(await partRows(deps, job.id, chunkIndex, filter, read, source.rows, signal));
  }
}

/**
 * Rows `from` to `to` of a chunk's part, as `filter` keeps them. The `found` and `errors` parts are
 * subsequences of `all` with the very same row texts, and equal texts have equal flags (the status
 * and result cells are in the text), so matching them in order picks exactly the rows in range.
 */
async function partRows(deps: EngineDeps, jobId: string, chunkIndex: number, filter: ExportFilter, from: number, to: number, signal: AbortSignal | undefined): Promise<string> {
  const all = csvRecords((await deps.objects.getBytes(partObjectKey(jobId, chunkIndex, 'all'), signal)).toString('utf8'));
  if (filter === 'all') return all.slice(from, to).join('');
  const kept = csvRecords((await deps.objects.getBytes(partObjectKey(jobId, chunkIndex, filter), signal)).toString('utf8'));
  let out = '';
  for (let i = 0, k = 0; i < to && k < kept.length; i++) {
    if (all[i] !== kept[k]) continue;
    if (i >= from) out += kept[k];
    k++;
  }
  return out;
}
