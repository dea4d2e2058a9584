import { Readable } from 'node:stream';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { parseCountry, phoneBreachesPipeline } from '../../../pipelines/phone-breaches.js';
import { csvLine } from '../../jobs/csv-writer.js';
import { EXPORT_FILTERS } from '../../storage/job-states.js';
import { assertNever, singleLookup } from '../../jobs/single-lookup.js';
import { ERROR_CODES, type ErrorCode } from '../../shared/errors.js';
import type { JobRecord } from '../../storage/job-records.js';
import type { ApiDeps } from '../api-deps.js';
import { keyAuth, requireWritable } from '../authenticate.js';
import { httpError } from '../errors.js';
import { jobView } from '../job-view.js';
import { inputOptionsOf } from './input-options.js';
import { refuseDeleted } from './job-delete-routes.js';
import { receiveUpload } from './upload.js';
import { AUDIT_ACTIONS } from '../../auth/audit-log.js';
import { requestAudit } from './audit-routes.js';

/** A JSON list of a million numbers is about 20 MB; the usual 64 KiB JSON limit is for small bodies. */
const NUMBERS_BODY_LIMIT = 48 * 1024 * 1024;
const PHONE_FEATURES = { breaches: phoneBreachesPipeline.type } as const;
const PHONE_JOBS_DESCRIPTION =
  'A phone-breach job: JSON `{feature: "breaches", numbers: [...], default_country?, download_link?, max_error_rate?, excel?}`, or a multipart form with `feature`, optional `default_country`, `country_column`, `download_link`, `column`, `max_error_rate`, `delimiter`, `encoding`, `excel`, then `file` (CSV with a `phone` column). `delimiter` (comma, semicolon, tab, pipe) and `encoding` (utf-8, utf-16le, utf-16be, windows-1252, iso-8859-1) are detected when not given; `excel=true` starts the result files with a UTF-8 BOM. Up to 1,000,000 numbers.';

/** Spec 4.4: the agent phone-breach lookup and phone jobs. */
export async function phoneRoutes(app: FastifyInstance, deps: ApiDeps): Promise<void> {
  app.addHook('onRequest', keyAuth(deps));
  const audit = requestAudit(deps);

  app.post<{ Body: unknown }>(
    '/api/agent/phone-breaches',
    { schema: { tags: ['phone'], description: 'Body: `query`, a phone number with its country code. 1 credit per call, repeats included.' } },
    async (request) => {
      const query = (request.body as { query?: unknown } | null | undefined)?.query;
      if (typeof query !== 'string' || query.trim() === '') throw httpError(400, ERROR_CODES.invalidRequest, 'query is required: a phone number with its country code');
      const answer = await singleLookup(deps.engine, phoneBreachesPipeline, request.caller!.accountId, query, 'per_call');
      if (answer.ok) return { ...answer.result, credits: answer.credits };
      switch (answer.reason) {
        case 'invalid':
          throw httpError(400, answer.code as ErrorCode, 'Invalid phone number: give it in international form, such as +49 30 1234567');
        case 'insufficient_credits':
          throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
        case 'unavailable':
          throw httpError(503, ERROR_CODES.providerUnavailable, 'Phone breach lookup is temporarily unavailable');
        case 'failed':
          throw httpError(502, ERROR_CODES.lookupFailed, 'Phone breach lookup failed. Please try again.');
        default:
          return assertNever(answer);
      }
    },
  );

  app.post(
    '/api/phone-jobs',
    {
      bodyLimit: NUMBERS_BODY_LIMIT,
      schema: { tags: ['phone'], description: PHONE_JOBS_DESCRIPTION },
      // Before the body is parsed: a 48 MB list costs about 0.7 s of the event loop and 250 MB to
      // parse, which a key that may not write, or an account with nothing to spend, must not get.
      // A multipart upload is streamed, and receiveUpload checks the balance before reading it.
      preParsing: async (request, _reply, payload) => {
        requireWritable(request);
        if (!request.isMultipart()) await requireCredits(deps, request.caller!.accountId);
        return payload;
      },
    },
    async (request, reply) => {
      const caller = requireWritable(request);
      const job = request.isMultipart()
        ? await receiveUpload(deps, request, caller.accountId, (fields) => featureType(fields.feature))
        : await jobFromNumbers(deps, request, caller.accountId);
      await audit(request, AUDIT_ACTIONS.jobCreated, job.id);
      return reply.code(202).send(await phoneJobView(deps, job));
    },
  );

  app.get<{ Querystring: { id?: string } }>(
    '/api/phone-jobs',
    { schema: { tags: ['phone'], querystring: { type: 'object', properties: { id: { type: 'string', maxLength: 100 } } } } },
    async (request) => {
      const id = request.query.id;
      if (!id) throw httpError(400, ERROR_CODES.invalidRequest, 'id is required');
      const job = await deps.engine.jobs.get(id);
      if (!job || job.accountId !== request.caller!.accountId || job.type !== phoneBreachesPipeline.type) {
        throw httpError(404, ERROR_CODES.jobNotFound, 'Job not found');
      }
      // Its links would be presigned for objects that are gone.
      await refuseDeleted(deps, job.id);
      return phoneJobView(deps, job);
    },
  );
}

function featureType(feature: string | undefined): string {
  if (feature === undefined) throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: feature is required (breaches)');
  const type = PHONE_FEATURES[feature as keyof typeof PHONE_FEATURES];
  if (!type) throw httpError(422, ERROR_CODES.invalidRequest, `Invalid request: unknown feature "${feature.slice(0, 40)}"; use breaches`);
  return type;
}

/** `{feature, numbers[], default_country?, download_link?, max_error_rate?, excel?}`: the numbers become a one-column CSV. */
async function jobFromNumbers(deps: ApiDeps, request: FastifyRequest, accountId: string): Promise<JobRecord> {
  const body = request.body as Record<string, unknown> | null | undefined;
  if (body === null || body === undefined || typeof body !== 'object' || Array.isArray(body)) {
    throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: send a JSON object or a multipart form with a file');
  }
  const type = featureType(typeof body.feature === 'string' ? body.feature : undefined);
  const { numbers } = body;
  if (!Array.isArray(numbers) || numbers.length === 0 || numbers.some((n) => typeof n !== 'string')) {
    throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: numbers must be a non-empty list of strings');
  }
  if (numbers.length > deps.settings.maxRows) {
    throw httpError(422, ERROR_CODES.tooManyRows, `Invalid request: at most ${deps.settings.maxRows} numbers per job`);
  }
  if (body.download_link !== undefined && typeof body.download_link !== 'boolean') {
    throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: download_link must be true or false');
  }
  let defaultCountry: string | undefined;
  if (body.default_country !== undefined) {
    defaultCountry = typeof body.default_country === 'string' ? parseCountry(body.default_country) : undefined;
    if (!defaultCountry) throw httpError(422, ERROR_CODES.unknownCountry, 'default_country must be an ISO 3166-1 alpha-2 code such as DE');
  }
  if (body.max_error_rate !== undefined && (typeof body.max_error_rate !== 'number' || !(body.max_error_rate >= 0 && body.max_error_rate <= 1))) {
    throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: max_error_rate must be a number from 0 to 1, such as 0.05');
  }
  const maxErrorRate = body.max_error_rate as number | undefined;
  // The numbers become a file Sluice writes itself: options about reading a customer's file would be silently void.
  const fileOnly = ['delimiter', 'encoding', 'country_column'].filter((f) => body[f] !== undefined);
  if (fileOnly.length > 0) {
    throw httpError(422, ERROR_CODES.invalidRequest, `Invalid request: ${fileOnly.join(', ')} only apply to an uploaded file (multipart form)`);
  }
  if (body.excel !== undefined && typeof body.excel !== 'boolean') {
    throw httpError(422, ERROR_CODES.invalidRequest, 'Invalid request: excel must be true or false');
  }
  const { excel } = inputOptionsOf({ excel: body.excel as boolean | undefined });
  // Checked before the body was parsed too; the balance may have been spent while it arrived.
  await requireCredits(deps, accountId);
  // One row per entry: a blank entry is written as a quoted cell, which the reader keeps as a row
  // (`invalid`, `empty_value`) where it would skip a blank line.
  const lines = (function* () {
    yield csvLine(['phone']);
    for (const n of numbers as string[]) yield n.trim() === '' ? `"${n.replaceAll('"', '""')}"\n` : csvLine([n]);
  })();
  const staged = await deps.jobService.stageInput(Readable.from(lines));
  return deps.jobService.create({
    jobId: staged.jobId,
    inputKey: staged.inputKey,
    accountId,
    type,
    inputName: null,
    options: {
      downloadLink: body.download_link === true,
      ...(defaultCountry ? { defaultCountry } : {}),
      ...(maxErrorRate === undefined ? {} : { maxErrorRate }),
      ...(excel ? { excel } : {}),
    },
  });
}

async function requireCredits(deps: ApiDeps, accountId: string): Promise<void> {
  if ((await deps.engine.billing.requireAccount(accountId)).credits <= 0) {
    throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
  }
}

/** The job's progress, and once it has completed, fresh presigned links per export filter. */
async function phoneJobView(deps: ApiDeps, job: JobRecord) {
  const view = { ...jobView(job, deps.jobService.activityClock()), feature: 'breaches' };
  if (job.status !== 'completed') return view;
  const links: Record<string, { download_url: string; expires_at: string }> = {};
  for (const filter of EXPORT_FILTERS) {
    const url = await deps.jobService.downloadUrl(job.id, filter, deps.settings.presignExpiresSeconds);
    links[filter] = { download_url: url.url, expires_at: url.expiresAt.toISOString() };
  }
  return { ...view, download_urls: links };
}

