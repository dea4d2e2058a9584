import { Readable } from 'node:stream';
import { jobLookups } from '../../pipelines/index.js';
import { chunkObjectKey, partObjectKey, resultObjectKey } from './chunk-format.js';
import type { EngineDeps } from './engine-deps.js';
import { EXPORT_FILTERS } from '../storage/job-states.js';
import type { JobRecord, Lease } from '../storage/job-records.js';
import { outputHeader } from './render-row.js';

/**
 * Excel opens a CSV without a BOM in the system's ANSI code page, so `Zoë` shows as `ZoÃ«`; with
 * it, as UTF-8. Other readers (papaparse, pandas with utf-8-sig, Sheets) skip it.
 */
const UTF8_BOM = '\uFEFF';

/**
 * Concatenates the part objects in row order into one result object per export filter, streamed
 * (never whole in memory), then completes the job and queues `bulk.completed` in one transaction.
 * Assembling again after a crash rewrites the same bytes. An `excel` job's files start with a
 * UTF-8 BOM.
 */
export async function assembleJob(deps: EngineDeps, job: JobRecord, lease: Lease, signal: AbortSignal): Promise<void> {
  const header = resultHeader(job);
  const chunkCount = job.chunkCount ?? 0;
  // The three results are written side by side: each waits on the object store most of the time.
  await Promise.all(
    EXPORT_FILTERS.map((filter) =>
      deps.objects.putStream(resultObjectKey(job.id, filter), Readable.from(concatenate(deps, job.id, chunkCount, filter, header, signal)), {
        contentType: 'text/csv; charset=utf-8',
        signal,
      }),
    ),
  );
  const now = deps.clock.now();
  const keys = { allKey: resultObjectKey(job.id, 'all'), foundKey: resultObjectKey(job.id, 'found'), errorsKey: resultObjectKey(job.id, 'errors') };
  await deps.jobs.complete(job.id, lease, keys, now);
  deps.log.info({ jobId: job.id, accountId: job.accountId, rows: job.totalRows, errors: job.errorRows }, 'job completed');
  // `retry-failed` redoes failed rows from their chunk and splices them into the chunk's parts.
  if (job.errorRows === 0) await removeIntermediates(deps, job.id, chunkCount);
}

/**
 * The first line of every result file, complete or partial. Only the first piece of each file
 * carries the BOM: the parts after it are bare rows, so a concatenated file never holds a second
 * one mid-text (Excel would show it as `ï»¿` in a cell).
 */
export function resultHeader(job: Pick<JobRecord, 'header' | 'type' | 'options'>): string {
  return (job.options.excel === true ? UTF8_BOM : '') + outputHeader(job.header, jobLookups(job.type, job.options));
}

async function* concatenate(deps: EngineDeps, jobId: string, chunkCount: number, filter: string, header: string, signal: AbortSignal): AsyncGenerator<Buffer> {
  yield Buffer.from(header);
  for (let i = 0; i < chunkCount; i++) {
    for await (const piece of await deps.objects.getStream(partObjectKey(jobId, i, filter), undefined, signal)) {
      yield piece as Buffer;
    }
  }
}

/** Chunks and parts are scaffolding; once the results are committed they only cost storage. */
async function removeIntermediates(deps: EngineDeps, jobId: string, chunkCount: number): Promise<void> {
  const keys: string[] = [];
  for (let i = 0; i < chunkCount; i++) {
    keys.push(chunkObjectKey(jobId, i), ...EXPORT_FILTERS.map((f) => partObjectKey(jobId, i, f)));
  }
  const results = await Promise.allSettled(keys.map((key) => deps.objects.delete(key)));
  const failed = results.filter((r) => r.status === 'rejected').length;
  if (failed > 0) deps.log.warn({ jobId, failed }, 'could not remove some intermediate objects');
}
