import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { EXPORT_FILTERS, JOB_STATUSES, TERMINAL_STATUSES } from '../storage/job-states.js';
import { jobSummary, type JobSummary } from '../jobs/job-summary.js';
import { estimateJob, type DryRunEstimate } from '../jobs/dry-run.js';
import { parseErrorRate } from '../jobs/job-service.js';
import type { JobOptions } from '../storage/job-records.js';
import { DELIMITER_HELP, ENCODING_HELP, parseDelimiter, parseEncoding } from '../jobs/input-options.js';
import { Worker } from '../jobs/worker.js';
import type { Engine } from '../jobs/engine.js';
import { parseLookups } from '../../pipelines/index.js';
import { parseCountry } from '../../pipelines/phone-breaches.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { parseCommand, printJson, type CliIo } from './cli-io.js';
import { formatJob } from './format-job.js';
import { ensureLocalAccount, LOCAL_ACCOUNT_ID } from './local-account.js';
import { checkNamedColumns } from './column-check.js';
import { progressReporter } from './progress.js';

export const RUN_USAGE =
  'sluice run FILE [--type gender|phone_breaches|company|email_breaches[,...]] [--lookup TYPE[:COLUMN]]... [--account ID] [--column NAME] [--default-country CC] [--country-column NAME] [--delimiter comma|semicolon|tab|pipe] [--encoding utf-8|utf-16le|utf-16be|windows-1252|iso-8859-1] [--excel] [--max-error-rate R] [--out DIR] [--dry-run] [--json]';

export interface RunResult {
  summary: JobSummary;
  files: Record<string, string>;
  exitCode: number;
}

/**
 * One job through the very engine the server uses: the file goes into the object store, an
 * in-process worker takes the job (beside any other workers on the same data dir), and the results
 * come back into --out. Exit code 0 completed, 3 paused, 1 failed or cancelled.
 */
export async function runCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(
    args,
    {
      type: { type: 'string' },
      lookup: { type: 'string', multiple: true },
      account: { type: 'string' },
      column: { type: 'string' },
      'default-country': { type: 'string' },
      'max-error-rate': { type: 'string' },
      'country-column': { type: 'string' },
      delimiter: { type: 'string' },
      encoding: { type: 'string' },
      excel: { type: 'boolean', default: false },
      out: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
    },
    1,
  );
  const input: RunInput = {
    file: positionals[0]!,
    type: values.type as string | undefined,
    lookups: values.lookup as string[] | undefined,
    accountId: values.account as string | undefined,
    column: values.column as string | undefined,
    defaultCountry: values['default-country'] as string | undefined,
    maxErrorRate: values['max-error-rate'] as string | undefined,
    countryColumn: values['country-column'] as string | undefined,
    delimiter: values.delimiter as string | undefined,
    encoding: values.encoding as string | undefined,
    excel: values.excel === true,
    outDir: values.out as string | undefined,
    progress: values.json ? undefined : io.stderr,
  };
  if (values['dry-run']) {
    const estimate = await estimateRun(engine, input);
    if (values.json) printJson(io, estimate);
    else io.stdout.write(formatEstimate(estimate));
    return 0;
  }
  const result = await runJob(engine, input);
  printRunResult(io, result, values.json === true);
  return result.exitCode;
}

/** `sluice run --dry-run`'s lines: the API's figures, one a line. */
function formatEstimate(e: DryRunEstimate): string {
  const codes = Object.entries(e.invalid_by_code).map(([code, n]) => `${code} ${n}`).join(', ');
  return [
    'dry run: no job made, nothing charged',
    `rows:           ${e.rows} (${e.valid} valid, ${e.invalid} invalid${codes ? `: ${codes}` : ''})`,
    `duplicates:     ${e.duplicates} (free)`,
    `repeats:        ${e.repeats} (paid for within the window, free)`,
    `credits needed: ${e.credits_needed}`,
    `balance:        ${e.balance} (${e.available} available)`,
    '',
  ].join('\n');
}

/** The job as it ended and the files written: `sluice run`'s output, and `sluice jobs resume --wait`'s. */
export function printRunResult(io: CliIo, result: RunResult, json: boolean): void {
  if (json) printJson(io, { ...result.summary, files: result.files });
  else {
    io.stdout.write(formatJob(result.summary));
    for (const [filter, file] of Object.entries(result.files)) io.stdout.write(`${filter.padEnd(10)} ${file}\n`);
  }
}

export interface RunInput {
  file: string;
  /** One job type, or several joined by commas; `gender` when neither this nor `lookups` is given. */
  type?: string | undefined;
  /** One `TYPE` or `TYPE:COLUMN` per lookup, for a job with several lookups per row. */
  lookups?: string[] | undefined;
  accountId?: string;
  column?: string;
  /** ISO 3166-1 alpha-2, any case: phone numbers without a country code are read as that country's. */
  defaultCountry?: string;
  /** Failure budget, 0 to 1, as written; unset means the default. */
  maxErrorRate?: string;
  /** Header of the column holding each row's country; unset: a `country` column if there is one. */
  countryColumn?: string | undefined;
  /** Cell separator as a word (`semicolon`) or the character; unset: detected. */
  delimiter?: string | undefined;
  /** Text encoding name; unset: detected. */
  encoding?: string | undefined;
  /** Result files start with a UTF-8 BOM for Excel. */
  excel?: boolean;
  downloadLink?: boolean;
  outDir?: string;
  progress?: NodeJS.WriteStream;
}

export async function runJob(engine: Engine, input: RunInput): Promise<RunResult> {
  const request = await runRequest(engine, input);
  await checkNamedColumns(engine.deps, input.file, request);
  const job = await engine.jobService.submit({ ...request, body: fs.createReadStream(input.file), inputName: path.basename(input.file) });
  return runInForeground(engine, job.id, { outDir: input.outDir, progress: input.progress });
}

/** `sluice run --dry-run`: the file read as its job would read it; no job, no charge, nothing stored. */
export async function estimateRun(engine: Engine, input: RunInput): Promise<DryRunEstimate> {
  const { deps, config } = engine;
  const request = await runRequest(engine, input, { dryRun: true });
  if (await deps.billing.account(request.accountId)) return estimateJob(deps, request, fs.createReadStream(input.file));
  // A new data dir: the local account does not exist yet, and a dry run stores nothing, so it is
  // estimated as its first real run would find it: the grant, and nothing paid for yet.
  const billing = Object.assign(Object.create(deps.billing) as typeof deps.billing, {
    balance: async () => ({ credits: config.billing.defaultAccountCredits, reserved: 0 }),
    freshlyBilled: async () => new Set<string>(),
  });
  return estimateJob({ ...deps, billing }, request, fs.createReadStream(input.file));
}

/** The job `sluice run` would make of its arguments, checked. */
async function runRequest(engine: Engine, input: RunInput, mode: { dryRun: boolean } = { dryRun: false }): Promise<{ accountId: string; type: string; options: JobOptions }> {
  const { deps, config } = engine;
  const stat = fs.statSync(input.file, { throwIfNoEntry: false });
  if (!stat?.isFile()) throw new AppError(ERROR_CODES.badArgument, `no such file: ${input.file}`);
  const defaultCountry = input.defaultCountry === undefined ? undefined : parseCountry(input.defaultCountry);
  if (input.defaultCountry !== undefined && defaultCountry === undefined) {
    throw new AppError(ERROR_CODES.badArgument, `--default-country: unknown country "${input.defaultCountry}"; give an ISO 3166-1 alpha-2 code such as DE or US`);
  }
  const maxErrorRate = input.maxErrorRate === undefined ? undefined : parseErrorRate(input.maxErrorRate);
  if (input.maxErrorRate !== undefined && maxErrorRate === undefined) {
    throw new AppError(ERROR_CODES.badArgument, `--max-error-rate must be a number from 0 to 1, such as 0.05, got "${input.maxErrorRate}"`);
  }
  const delimiter = input.delimiter === undefined ? undefined : parseDelimiter(input.delimiter);
  if (input.delimiter !== undefined && delimiter === undefined) {
    throw new AppError(ERROR_CODES.badArgument, `--delimiter must be ${DELIMITER_HELP}, got "${input.delimiter}"`);
  }
  const encoding = input.encoding === undefined ? undefined : parseEncoding(input.encoding);
  if (input.encoding !== undefined && encoding === undefined) {
    throw new AppError(ERROR_CODES.badArgument, `--encoding must be one of ${ENCODING_HELP}, got "${input.encoding}"`);
  }
  const countryColumn = input.countryColumn?.trim();
  if (input.countryColumn !== undefined && !countryColumn) {
    throw new AppError(ERROR_CODES.badArgument, '--country-column needs the header of the column holding each row\'s country');
  }
  const asked = parseLookups({ type: input.type ?? (input.lookups?.length ? undefined : 'gender'), column: input.column, lookup: input.lookups });
  const accountId = input.accountId ?? (mode.dryRun ? LOCAL_ACCOUNT_ID : await ensureLocalAccount(deps.billing, config.billing.defaultAccountCredits, deps.clock.now()));

  return {
    accountId,
    type: asked.type,
    options: {
      ...(asked.column === undefined ? {} : { column: asked.column }),
      ...(asked.lookups === undefined ? {} : { lookups: asked.lookups }),
      ...(input.downloadLink ? { downloadLink: true } : {}),
      ...(defaultCountry === undefined ? {} : { defaultCountry }),
      ...(maxErrorRate === undefined ? {} : { maxErrorRate }),
      ...(delimiter === undefined ? {} : { delimiter }),
      ...(encoding === undefined ? {} : { encoding }),
      ...(countryColumn ? { countryColumn } : {}),
      ...(input.excel ? { excel: true } : {}),
    },
  };
}

/**
 * Runs a job to its end (or pause) in an in-process worker beside any others on the same data, with
 * the progress bar on `progress`, and once it has completed writes its result files into `outDir`
 * (default `sluice-results/ID`). What `sluice run` does after the upload, and `sluice jobs resume --wait`.
 */
export async function runInForeground(engine: Engine, jobId: string, input: { outDir?: string | undefined; progress?: NodeJS.WriteStream | undefined }): Promise<RunResult> {
  const { deps, jobService, config } = engine;
  const job = { id: jobId };
  const settled = async () => {
    const status = await deps.jobs.status(job.id);
    return status === undefined || status === JOB_STATUSES.paused || TERMINAL_STATUSES.has(status);
  };
  const worker = new Worker(deps);
  const reporter = input.progress && progressReporter(input.progress);
  // A read still in flight when the run ends must not redraw the bar under the final line; and a
  // progress line is not worth failing the run for, so a read that fails is only a frame skipped.
  let ticking = true;
  const ticker = setInterval(() => {
    if (reporter) deps.jobs.require(job.id).then((j) => ticking && reporter.update(jobSummary(j)), () => undefined);
  }, 200);
  const onSignal = () => worker.stop();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    await worker.run({ concurrency: config.jobs.workerConcurrency, until: settled });
  } finally {
    ticking = false;
    clearInterval(ticker);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  const finished = await deps.jobs.require(job.id);
  reporter?.done(jobSummary(finished));

  const files: Record<string, string> = {};
  if (finished.status === JOB_STATUSES.completed) {
    const outDir = path.resolve(input.outDir ?? path.join('sluice-results', job.id));
    fs.mkdirSync(outDir, { recursive: true });
    for (const filter of EXPORT_FILTERS) {
      const file = path.join(outDir, `${filter}.csv`);
      await pipeline(await jobService.openResult(job.id, filter), fs.createWriteStream(file));
      files[filter] = file;
    }
  }
  return { summary: jobSummary(finished), files, exitCode: exitCodeFor(finished.status) };
}

/** 0 completed, 3 paused (resumable), 130 interrupted (the job goes on in any worker), 1 otherwise. */
export function exitCodeFor(status: string): number {
  if (status === JOB_STATUSES.completed) return 0;
  if (status === JOB_STATUSES.paused) return 3;
  if (status === JOB_STATUSES.running || status === JOB_STATUSES.queued) return 130;
  return 1;
}
