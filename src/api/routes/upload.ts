import { createHash } from 'node:crypto';
import { PassThrough, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { isJobType, parseLookups, PIPELINES } from '../../../pipelines/index.js';
import { parseCountry } from '../../../pipelines/phone-breaches.js';
import { estimateJob, type DryRunEstimate } from '../../jobs/dry-run.js';
import { parseErrorRate } from '../../jobs/job-service.js';
import { inputOptionsOf } from './input-options.js';
import { AppError, ERROR_CODES, isAppError, systemCodeOf } from '../../shared/errors.js';
import type { JobOptions, JobRecord } from '../../storage/job-records.js';
import type { IdempotencyClaim } from '../../storage/records.js';
import type { ApiDeps } from '../api-deps.js';
import { apiQuotas } from '../quotas.js';
import { httpError } from '../errors.js';

const FIELDS = [
  'type',
  'feature',
  'download_link',
  'column',
  'default_country',
  'max_error_rate',
  'delimiter',
  'encoding',
  'country_column',
  'excel',
  'dry_run',
] as const;

export type UploadFields = Partial<Record<(typeof FIELDS)[number], string>>;

/** `lookup` may be given once per lookup; more than this many is not a job but an attack. */
const MAX_LOOKUP_FIELDS = 8;

interface Received {
  fields: UploadFields;
  /** Each `lookup` field, in order: `TYPE` or `TYPE:COLUMN`. */
  lookups: string[];
  fileName: string | null;
  fileSha256: string | null;
  staged: { jobId: string; inputKey: string; size: number } | null;
  /** A dry run's figures, read from the file as it streamed past (never stored). */
  estimate: DryRunEstimate | null;
}

/** What the file part is for, decided when it starts: by then every field sent before it is known. */
type FileUse = 'store' | 'hash' | 'estimate';

/** A bulk upload makes a job, or with `dry_run` only says what the job would do. */
export type UploadOutcome = { job: JobRecord; estimate?: undefined } | { job?: undefined; estimate: DryRunEstimate };

/**
 * Streams a bulk upload straight into the object store (never whole in memory or on disk), with
 * the size limit enforced on the way, then queues the job. With an Idempotency-Key, a retry of
 * the same request returns the first job, and a different request under the same key is refused.
 */
export async function receiveUpload(
  deps: ApiDeps,
  request: FastifyRequest,
  accountId: string,
  /** Where the job type comes from: the `type` field, unless a route names it otherwise. */
  typeOf: (fields: UploadFields) => string | undefined = (fields) => fields.type,
): Promise<JobRecord> {
  return (await receive(deps, request, accountId, typeOf, false)).job!;
}

/**
 * As `receiveUpload`, or with `dry_run` (the query parameter, or a field sent before the file)
 * the figures of `estimateJob`: the file is read as it streams past and never stored, no job is
 * made, nothing is charged, and an Idempotency-Key is neither claimed nor recorded.
 */
export async function receiveBulkUpload(deps: ApiDeps, request: FastifyRequest, accountId: string, dryRunAsked: boolean): Promise<UploadOutcome> {
  return receive(deps, request, accountId, (fields) => fields.type, true, dryRunAsked);
}

async function receive(
  deps: ApiDeps,
  request: FastifyRequest,
  accountId: string,
  typeOf: (fields: UploadFields) => string | undefined,
  dryRunAllowed: boolean,
  dryRunAsked = false,
): Promise<UploadOutcome> {
  if (!request.isMultipart()) throw httpError(415, ERROR_CODES.invalidRequest, 'Expected a multipart/form-data body');
  const idempotencyKey = idempotencyKeyOf(request);
  const idem = deps.idempotency;
  let claim = { state: 'new' } as IdempotencyClaim;
  let claimed = false;
  const received: Received = { fields: {}, lookups: [], fileName: null, fileSha256: null, staged: null, estimate: null };
  const quotas = apiQuotas(deps);
  const dryRun = (): boolean => dryRunAllowed && (dryRunAsked || dryRunField(received.fields.dry_run));

  // Decided when the file starts rather than before the body is read, so that a `dry_run` field is
  // known: an estimate is free, so it neither needs credits nor takes the Idempotency-Key.
  const admit = async (): Promise<FileUse> => {
    if (dryRun()) return 'estimate';
    if (idempotencyKey) {
      claim = await idem.claim(accountId, idempotencyKey, deps.engine.clock.now());
      claimed = claim.state === 'new';
    }
    if (claim.state === 'in_flight') {
      throw httpError(409, ERROR_CODES.idempotencyInFlight, 'A request with this Idempotency-Key is still in progress');
    }
    // A retry of a job already made gets that job even if the job has since spent the balance.
    if (claim.state === 'new' && (await deps.engine.billing.requireAccount(accountId)).credits <= 0) {
      throw httpError(402, ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.');
    }
    // An account at its stored-bytes quota is refused before a byte is stored; one under it is
    // checked again with the file's size once it has streamed past (below).
    if (claim.state === 'new') await quotas.require(accountId, 'storedBytes', 1);
    return claim.state === 'new' ? 'store' : 'hash';
  };

  try {
    // A replay is only compared, never stored: its bytes are hashed and dropped.
    await readParts(deps, request, admit, (fields) => jobShape(typeOf, fields, received.lookups, accountId), received);
    if (received.fileSha256 === null) throw httpError(422, ERROR_CODES.invalidRequest, 'file is required');
    if (received.estimate !== null) return { estimate: received.estimate };
    const { fields } = received;
    const { asked, defaultCountry, maxErrorRate, input } = jobShape(typeOf, fields, received.lookups, accountId);
    // Optional fields join the fingerprint only when given, so keys stored before they existed still match.
    const fingerprinted = [
      asked.type,
      asked.column ?? null,
      fields.download_link ?? 'false',
      received.fileSha256,
      ...(defaultCountry ? [defaultCountry] : []),
      ...(maxErrorRate === undefined ? [] : [`max_error_rate=${maxErrorRate}`]),
      ...(asked.lookups === undefined ? [] : [`lookups=${JSON.stringify(asked.lookups)}`]),
      ...(input.delimiter === undefined ? [] : [`delimiter=${input.delimiter}`]),
      ...(input.encoding === undefined ? [] : [`encoding=${input.encoding}`]),
      ...(input.countryColumn === undefined ? [] : [`country_column=${input.countryColumn}`]),
      ...(input.excel ? ['excel=true'] : []),
    ];
    const fingerprint = createHash('sha256').update(JSON.stringify(fingerprinted)).digest('hex');

    if (claim.state === 'done') {
      if (claim.fingerprint !== fingerprint) {
        throw httpError(422, ERROR_CODES.idempotencyConflict, 'This Idempotency-Key was used with a different request');
      }
      return { job: await deps.jobService.get(claim.jobId) };
    }
    // The file is stored by now: past the quota, the catch below removes it again.
    await quotas.require(accountId, 'storedBytes', received.staged!.size);
    const job = await deps.jobService.create({
      jobId: received.staged!.jobId,
      inputKey: received.staged!.inputKey,
      inputBytes: received.staged!.size,
      accountId,
      type: asked.type,
      inputName: received.fileName,
      options: {
        ...(asked.column ? { column: asked.column } : {}),
        ...(asked.lookups ? { lookups: asked.lookups } : {}),
        downloadLink: fields.download_link === 'true',
        ...(defaultCountry ? { defaultCountry } : {}),
        ...(maxErrorRate === undefined ? {} : { maxErrorRate }),
        ...input,
      },
    });
    if (idempotencyKey) await idem.finish(accountId, idempotencyKey, fingerprint, job.id);
    return { job };
  } catch (e: unknown) {
    if (idempotencyKey && claimed) await idem.release(accountId, idempotencyKey);
    if (received.staged) await deps.jobService.discardInput(received.staged.inputKey).catch(() => undefined);
    throw uploadError(e);
  }
}

/** The fields that shape a job, checked with the API's error codes. */
function jobShape(typeOf: (fields: UploadFields) => string | undefined, fields: UploadFields, lookups: readonly string[], accountId: string) {
  const asked = askedLookups(typeOf(fields), fields.column, lookups);
  if (fields.download_link !== undefined && fields.download_link !== 'true' && fields.download_link !== 'false') {
    throw httpError(422, ERROR_CODES.invalidRequest, 'download_link must be true or false');
  }
  const defaultCountry = fields.default_country ? parseCountry(fields.default_country) : undefined;
  if (fields.default_country && defaultCountry === undefined) {
    throw httpError(422, ERROR_CODES.unknownCountry, `default_country must be an ISO 3166-1 alpha-2 code such as DE, got "${fields.default_country.slice(0, 40)}"`);
  }
  const maxErrorRate = fields.max_error_rate ? parseErrorRate(fields.max_error_rate) : undefined;
  if (fields.max_error_rate && maxErrorRate === undefined) {
    throw httpError(422, ERROR_CODES.invalidRequest, `max_error_rate must be a number from 0 to 1, such as 0.05, got "${fields.max_error_rate.slice(0, 40)}"`);
  }
  const input = inputOptionsOf(fields);
  const options: JobOptions = {
    ...(asked.column ? { column: asked.column } : {}),
    ...(asked.lookups ? { lookups: asked.lookups } : {}),
    ...(defaultCountry ? { defaultCountry } : {}),
    ...input,
  };
  return { asked, defaultCountry, maxErrorRate, input, job: { accountId, type: asked.type, options } };
}

/** `dry_run` as a form sends it: true or false; empty counts as not given. */
function dryRunField(value: string | undefined): boolean {
  if (value === undefined || value === '' || value === 'false') return false;
  if (value === 'true') return true;
  throw httpError(422, ERROR_CODES.invalidRequest, 'dry_run must be true or false');
}

/**
 * The job's type and lookups from `type` (one type, or several joined by commas), `column`, and the
 * `lookup` fields (`TYPE` or `TYPE:COLUMN`, one per lookup), with the API's error codes.
 */
function askedLookups(type: string | undefined, column: string | undefined, lookups: readonly string[]): ReturnType<typeof parseLookups> {
  if (lookups.length === 0) {
    if (!type) throw httpError(422, ERROR_CODES.invalidRequest, 'type is required');
    const unknown = type.split(',').find((t) => !isJobType(t.trim()));
    if (unknown !== undefined) {
      throw httpError(422, ERROR_CODES.unknownJobType, `Invalid request: unknown type "${unknown.slice(0, 40)}"; use one of ${Object.keys(PIPELINES).join(', ')}`);
    }
  }
  try {
    return parseLookups({ type: type || undefined, column: column || undefined, lookup: lookups });
  } catch (e: unknown) {
    if (!isAppError(e)) throw e;
    throw httpError(422, e.code === ERROR_CODES.unknownJobType ? e.code : ERROR_CODES.invalidRequest, e.message);
  }
}

/** Fills `received` as it goes, so that a failure half-way still tells the caller what to clean up. */
async function readParts(
  deps: ApiDeps,
  request: FastifyRequest,
  admit: () => Promise<FileUse>,
  shapeOf: (fields: UploadFields) => { job: { accountId: string; type: string; options: JobOptions } },
  received: Received,
): Promise<void> {
  for await (const part of request.parts()) {
    if (part.type === 'field') {
      if (part.fieldname === 'lookup') {
        if (received.lookups.length === MAX_LOOKUP_FIELDS) throw httpError(422, ERROR_CODES.invalidRequest, `at most ${MAX_LOOKUP_FIELDS} lookup fields`);
        received.lookups.push(String(part.value));
      } else if ((FIELDS as readonly string[]).includes(part.fieldname)) {
        received.fields[part.fieldname as (typeof FIELDS)[number]] = String(part.value);
      }
      continue;
    }
    if (part.fieldname !== 'file' || received.fileSha256 !== null) {
      part.file.resume();
      throw httpError(422, ERROR_CODES.invalidRequest, 'send exactly one file, in the field named file');
    }
    let use: FileUse;
    try {
      use = await admit();
    } catch (e: unknown) {
      part.file.resume();
      throw e;
    }
    received.fileName = part.filename || null;
    const hash = createHash('sha256');
    const tap = new PassThrough({
      transform(chunk: Buffer, _encoding, done) {
        hash.update(chunk);
        done(null, chunk);
      },
    });
    if (use === 'store') {
      const staging = deps.jobService.stageInput(tap);
      // If the store gives up first, the tap must fail too, or the request would stall unread.
      staging.catch((e: unknown) => tap.destroy(e as Error));
      try {
        await pipeline(part.file, tap);
      } catch (e: unknown) {
        await staging.catch(() => undefined);
        throw e;
      }
      received.staged = await staging;
    } else if (use === 'estimate') {
      received.estimate = await estimateStream(deps, shapeOf(received.fields).job, part.file, tap);
    } else {
      await pipeline(part.file, tap, new Writable({ write: (_chunk, _encoding, done) => done() }));
    }
    if ((part.file as { truncated?: boolean }).truncated) throw tooLarge(deps);
    received.fileSha256 = hash.digest('hex');
  }
}

/**
 * A dry run reads the file as it arrives, never storing it. A file the job would refuse is refused
 * here with the same code; its unread rest is drained so that the answer is not a reset connection.
 */
async function estimateStream(
  deps: ApiDeps,
  job: { accountId: string; type: string; options: JobOptions },
  file: NodeJS.ReadableStream,
  tap: PassThrough,
): Promise<DryRunEstimate> {
  const piping = pipeline(file, tap);
  try {
    const estimate = await estimateJob(deps.engine, job, tap);
    await piping;
    return estimate;
  } catch (e: unknown) {
    tap.resume();
    await piping.catch(() => undefined);
    // A row cut off at the size limit is the limit's fault, not the file's.
    if ((file as { truncated?: boolean }).truncated) throw tooLarge(deps);
    if (!isAppError(e) || e.statusCode !== undefined) throw e;
    // The error a job would fail with, as a 422 with its code: the file, not the request, is at fault.
    throw new AppError(e.code, e.message, { statusCode: 422, ...(e.details ? { details: e.details } : {}), cause: e });
  }
}

function idempotencyKeyOf(request: FastifyRequest): string | undefined {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const key = Array.isArray(raw) ? raw[0] : raw;
  if (!key || key.length > 255) throw httpError(422, ERROR_CODES.invalidRequest, 'Idempotency-Key must be 1 to 255 characters');
  return key;
}

function tooLarge(deps: ApiDeps): AppError {
  return httpError(413, ERROR_CODES.payloadTooLarge, `file is larger than ${deps.settings.maxUploadBytes} bytes`);
}

/**
 * Multipart's own limit errors are 413; our errors (storage included) keep their meaning; anything
 * else the multipart parser throws (no boundary, a cut-off body, a bad part header) is the body's fault.
 */
function uploadError(e: unknown): unknown {
  if (isAppError(e)) return e;
  const code = systemCodeOf(e);
  if (code === 'FST_REQ_FILE_TOO_LARGE' || code === 'FST_PARTS_LIMIT' || code === 'FST_FILES_LIMIT' || code === 'FST_FIELDS_LIMIT') {
    return new AppError(ERROR_CODES.payloadTooLarge, 'upload is larger than allowed', { statusCode: 413, cause: e });
  }
  return new AppError(ERROR_CODES.invalidRequest, 'Malformed multipart body', { statusCode: 400, cause: e });
}

/**
 * Streams the one `file` part of a multipart upload into the object store through `stage`, as a
 * bulk upload does (never whole in memory, the size limit enforced on the way), and returns the
 * fields named in `fieldNames` that came before it. For uploads that are no bulk job (a target
 * list). On any failure what was staged is discarded before the error is thrown.
 */
export async function receiveFileUpload<S>(
  deps: ApiDeps,
  request: FastifyRequest,
  fieldNames: readonly string[],
  stage: (body: PassThrough) => Promise<S>,
  discard: (staged: S) => Promise<void>,
): Promise<{ fields: Record<string, string>; fileName: string | null; staged: S }> {
  if (!request.isMultipart()) throw httpError(415, ERROR_CODES.invalidRequest, 'Expected a multipart/form-data body');
  const fields: Record<string, string> = {};
  let staged: { value: S } | undefined;
  let fileName: string | null = null;
  try {
    for await (const part of request.parts()) {
      if (part.type === 'field') {
        if (fieldNames.includes(part.fieldname)) fields[part.fieldname] = String(part.value);
        continue;
      }
      if (part.fieldname !== 'file' || staged !== undefined) {
        part.file.resume();
        throw httpError(422, ERROR_CODES.invalidRequest, 'send exactly one file, in the field named file');
      }
      fileName = part.filename || null;
      const tap = new PassThrough();
      const staging = stage(tap);
      // If the store gives up first, the tap must fail too, or the request would stall unread.
      staging.catch((e: unknown) => tap.destroy(e as Error));
      try {
        await pipeline(part.file, tap);
      } catch (e: unknown) {
        await staging.then(discard, () => undefined).catch(() => undefined);
        throw e;
      }
      staged = { value: await staging };
      if ((part.file as { truncated?: boolean }).truncated) throw tooLarge(deps);
    }
    if (staged === undefined) throw httpError(422, ERROR_CODES.invalidRequest, 'file is required');
    return { fields, fileName, staged: staged.value };
  } catch (e: unknown) {
    if (staged !== undefined) await discard(staged.value).catch(() => undefined);
    throw uploadError(e);
  }
}
