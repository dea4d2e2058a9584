import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { EXPORT_FILTERS, JOB_STATUSES, type ExportFilter, type JobStatus } from '../storage/job-states.js';
import { jobSummary } from '../jobs/job-summary.js';
import type { Engine } from '../jobs/engine.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { parseCommand, positiveInt, printJson, type CliIo } from './cli-io.js';
import { formatJob } from './format-job.js';

export const JOBS_USAGE = [
  'sluice jobs list [--status S] [--account ID] [--limit N] [--offset N] [--json]',
  'sluice jobs show ID [--json]',
  'sluice jobs resume ID [--json]',
  'sluice jobs retry-failed ID [--json]',
  'sluice jobs cancel ID [--json]',
  'sluice jobs download ID [--filter all|found|errors] [--out FILE] [--url] [--json]',
];

export async function jobsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const { jobService, deps } = engine;
  switch (sub) {
    case 'list': {
      const { values } = parseCommand(
        rest,
        { status: { type: 'string' }, account: { type: 'string' }, limit: { type: 'string' }, offset: { type: 'string' } },
        0,
      );
      const status = values.status as string | undefined;
      if (status !== undefined && !Object.values(JOB_STATUSES).includes(status as JobStatus)) {
        throw new AppError(ERROR_CODES.badArgument, `--status must be one of ${Object.values(JOB_STATUSES).join(', ')}`);
      }
      const { jobs, total } = await deps.jobs.list({
        accountId: values.account as string | undefined,
        status: status as JobStatus | undefined,
        limit: Math.min(positiveInt(values.limit as string | undefined, '--limit', 20), 1000),
        offset: positiveInt(values.offset as string | undefined, '--offset', 0),
      });
      const summaries = jobs.map(jobSummary);
      if (values.json) printJson(io, { jobs: summaries, total });
      else {
        for (const s of summaries) {
          io.stdout.write(`${s.id}  ${s.type.padEnd(8)} ${s.status.padEnd(10)} ${`${s.percent}%`.padStart(6)}  ${s.rows.total ?? '?'} rows  ${s.credits_used} credits  ${s.reason ?? ''}\n`);
        }
        io.stdout.write(`${summaries.length} of ${total} jobs\n`);
      }
      return 0;
    }
    case 'show':
    case 'resume':
    case 'retry-failed':
    case 'cancel': {
      const { values, positionals } = parseCommand(rest, {}, 1);
      const id = positionals[0]!;
      const act = { show: jobService.get, resume: jobService.resume, 'retry-failed': jobService.retryFailed, cancel: jobService.cancel }[sub];
      const job = await act.call(jobService, id);
      const summary = jobSummary(job);
      if (values.json) printJson(io, summary);
      else io.stdout.write(formatJob(summary));
      return 0;
    }
    case 'download': {
      const { values, positionals } = parseCommand(
        rest,
        { filter: { type: 'string', default: 'all' }, out: { type: 'string' }, url: { type: 'boolean', default: false } },
        1,
      );
      const id = positionals[0]!;
      const filter = values.filter as string;
      if (!EXPORT_FILTERS.includes(filter as ExportFilter)) {
        throw new AppError(ERROR_CODES.badArgument, `--filter must be one of ${EXPORT_FILTERS.join(', ')}`);
      }
      if (values.url) {
        const url = await jobService.downloadUrl(id, filter as ExportFilter, engine.config.presignExpiresSeconds);
        if (values.json) printJson(io, { url: url.url, expires_at: url.expiresAt.toISOString() });
        else io.stdout.write(`${url.url}\n`);
        return 0;
      }
      const body = await jobService.openResult(id, filter as ExportFilter);
      const out = values.out as string | undefined;
      await pipeline(body, out === undefined ? io.stdout : fs.createWriteStream(out), out === undefined ? { end: false } : {});
      if (out !== undefined && values.json) printJson(io, { file: out });
      return 0;
    }
    default:
      throw new AppError(ERROR_CODES.badArgument, `usage:\n  ${JOBS_USAGE.join('\n  ')}`);
  }
}
