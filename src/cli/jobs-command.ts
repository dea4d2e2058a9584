import fs from 'node:fs';
import { pipeline } from 'node:stream/promises';
import { EXPORT_FILTERS, JOB_STATUSES, type ExportFilter, type JobStatus } from '../storage/job-states.js';
import { AUDIT_ACTIONS, AuditLog } from '../auth/audit-log.js';
import { deleteJob, refuseDeleted } from '../jobs/job-deletion.js';
import { openPartialResult } from '../jobs/partial-results.js';
import { deletionTimes } from '../jobs/job-deletion.js';
import { watchJob } from './watch-job.js';
import { jobActivity } from '../jobs/job-activity.js';
import { jobSummary } from '../jobs/job-summary.js';
import type { Engine } from '../jobs/engine.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { parseCommand, positiveInt, printJson, type CliIo } from './cli-io.js';
import { formatJob } from './format-job.js';
import { printRunResult, runInForeground } from './run-command.js';

export const JOBS_USAGE = [
  'sluice jobs list [--status S] [--account ID] [--limit N] [--offset N] [--json]',
  'sluice jobs show ID [--json]',
  'sluice jobs watch ID [--json]',
  'sluice jobs resume ID [--wait] [--out DIR] [--json]',
  'sluice jobs retry-failed ID [--json]',
  'sluice jobs cancel ID [--json]',
  'sluice jobs download ID [--filter all|found|errors] [--partial] [--out FILE] [--url] [--json]',
  'sluice jobs delete ID [--json]',
];

export async function jobsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const [sub, ...rest] = args;
  const { jobService, deps } = engine;
  switch (sub) {
    case 'watch': {
      const { values, positionals } = parseCommand(rest, {}, 1);
      const result = await watchJob(engine, positionals[0]!, values.json ? undefined : io.stderr);
      printRunResult(io, result, values.json === true);
      if (result.summary.status === JOB_STATUSES.completed && !values.json) io.stdout.write(`download the results with \`sluice jobs download ${result.summary.id} --out FILE\`\n`);
      return result.exitCode;
    }
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
      const at = jobService.activityClock();
      const deleted = await deletionTimes(deps, jobs.map((job) => job.id));
      const summaries = jobs.map((job) => {
        const when = deleted.get(job.id);
        return { ...jobSummary(job), ...jobActivity(job, at), deleted_at: when === undefined ? null : new Date(when).toISOString() };
      });
      if (values.json) printJson(io, { jobs: summaries, total });
      else {
        for (const s of summaries) {
          const note = s.deleted_at ? `deleted ${s.deleted_at}: files gone` : s.stalled ? `stalled since ${s.stalled_since}: sluice jobs resume ${s.id}` : (s.reason ?? '');
          io.stdout.write(`${s.id}  ${s.type.padEnd(8)} ${s.status.padEnd(10)} ${`${s.percent}%`.padStart(6)}  ${s.rows.total ?? '?'} rows  ${s.credits_used} credits  ${note}\n`);
        }
        io.stdout.write(`${summaries.length} of ${total} jobs\n`);
      }
      return 0;
    }
    case 'resume': {
      const { values, positionals } = parseCommand(rest, { wait: { type: 'boolean', default: false }, out: { type: 'string' } }, 1);
      const id = positionals[0]!;
      await refuseDeleted(deps, id);
      const resumed = await jobService.resume(id);
      if (values.wait) {
        const result = await runInForeground(engine, id, { outDir: values.out as string | undefined, progress: values.json ? undefined : io.stderr });
        printRunResult(io, result, values.json === true);
        return result.exitCode;
      }
      if (values.out !== undefined) throw new AppError(ERROR_CODES.badArgument, '--out needs --wait: the files are written when the job ends here');
      const summary = jobSummary(resumed);
      if (values.json) printJson(io, { ...summary, ...jobActivity(resumed, jobService.activityClock()) });
      else io.stdout.write(`${formatJob(summary)}resumed: a running \`sluice worker\` or \`sluice serve\` takes it up; or run it here with \`sluice jobs resume ${id} --wait\`\n`);
      return 0;
    }
    case 'show':
    case 'retry-failed':
    case 'cancel': {
      const { values, positionals } = parseCommand(rest, {}, 1);
      const id = positionals[0]!;
      const act = { show: jobService.get, 'retry-failed': jobService.retryFailed, cancel: jobService.cancel }[sub];
      // A deleted job is still shown (its counts and credits are its account's record); it never runs again.
      if (sub !== 'show') await refuseDeleted(deps, id);
      const job = await act.call(jobService, id);
      const summary = jobSummary(job);
      const deletion = sub === 'show' ? await deps.store.retention.deletion(job.id) : undefined;
      const deleted = deletion && { deleted_at: new Date(deletion.deletedAt).toISOString(), deleted_reason: deletion.reason };
      const activity = jobActivity(job, jobService.activityClock());
      if (values.json) printJson(io, { ...summary, ...activity, ...deleted });
      else io.stdout.write(formatJob(summary, activity) + (deleted ? `deleted: ${deleted.deleted_at} (${deleted.deleted_reason}); its files are gone\n` : ''));
      return 0;
    }
    case 'download': {
      const { values, positionals } = parseCommand(
        rest,
        { filter: { type: 'string', default: 'all' }, out: { type: 'string' }, url: { type: 'boolean', default: false }, partial: { type: 'boolean', default: false } },
        1,
      );
      const id = positionals[0]!;
      await refuseDeleted(deps, id);
      const filter = values.filter as string;
      if (!EXPORT_FILTERS.includes(filter as ExportFilter)) {
        throw new AppError(ERROR_CODES.badArgument, `--filter must be one of ${EXPORT_FILTERS.join(', ')}`);
      }
      const out = values.out as string | undefined;
      const job = values.partial ? await jobService.get(id) : undefined;
      if (job && job.status !== JOB_STATUSES.completed) {
        // Streamed from the committed rows: there is no stored object to give a URL of.
        if (values.url) throw new AppError(ERROR_CODES.badArgument, '--url is for complete results; a partial file is streamed, use --out FILE');
        const partial = await openPartialResult(deps, job, filter as ExportFilter);
        await pipeline(partial.body, out === undefined ? io.stdout : fs.createWriteStream(out), out === undefined ? { end: false } : {});
        const note = { partial: true, rows_included: partial.rowsIncluded, rows_total: partial.totalRows };
        // Marked on stderr when the rows go to stdout, so the CSV there stays clean.
        if (values.json && out !== undefined) printJson(io, { file: out, ...note });
        else io.stderr.write(`partial: ${partial.rowsIncluded} of ${partial.totalRows} rows (job ${job.status}); not a complete result\n`);
        return 0;
      }
      if (values.url) {
        const url = await jobService.downloadUrl(id, filter as ExportFilter, engine.config.presignExpiresSeconds);
        if (values.json) printJson(io, { url: url.url, expires_at: url.expiresAt.toISOString() });
        else io.stdout.write(`${url.url}\n`);
        return 0;
      }
      const body = await jobService.openResult(id, filter as ExportFilter);
      await pipeline(body, out === undefined ? io.stdout : fs.createWriteStream(out), out === undefined ? { end: false } : {});
      if (out !== undefined && values.json) printJson(io, { file: out });
      return 0;
    }
    case 'delete': {
      const { values, positionals } = parseCommand(rest, {}, 1);
      const job = await jobService.get(positionals[0]!);
      const { deletion, marked } = await deleteJob(deps, job.id);
      if (marked) await new AuditLog(deps.store.audit, deps.clock, deps.log).record(job.accountId, AUDIT_ACTIONS.jobDeleted, { type: 'cli' }, job.id);
      const deletedAt = new Date(deletion.deletedAt).toISOString();
      if (values.json) printJson(io, { id: job.id, status: job.status, deleted_at: deletedAt, deleted_reason: deletion.reason, files_deleted: deletion.purgedAt !== null });
      else io.stdout.write(`${job.id}: files deleted (${marked ? 'now' : `already, at ${deletedAt}`}); its record and ledger lines stay\n`);
      return 0;
    }
    default:
      throw new AppError(ERROR_CODES.badArgument, `usage:\n  ${JOBS_USAGE.join('\n  ')}`);
  }
}
