import { AppError, ERROR_CODES } from '../src/shared/errors.js';
import { companyPipeline } from './company.js';
import { domainPipeline } from './domain.js';
import { emailBreachesPipeline } from './email-breaches.js';
import { genderPipeline } from './gender.js';
import { ipNetworkPipeline } from './ip-network.js';
import { phoneBreachesPipeline } from './phone-breaches.js';
import type { Pipeline } from './pipeline.js';
import { validityPipeline } from './validity.js';

/** Every job type, listed by hand so that adding one is a visible, reviewed change. */
export const PIPELINES = {
  gender: genderPipeline,
  phone_breaches: phoneBreachesPipeline,
  company: companyPipeline,
  email_breaches: emailBreachesPipeline,
  validity: validityPipeline,
  ip: ipNetworkPipeline,
  domain: domainPipeline,
} as const;

export type JobType = keyof typeof PIPELINES;

export function isJobType(type: string): type is JobType {
  return Object.hasOwn(PIPELINES, type);
}

export function pipelineFor(type: string): Pipeline {
  if (!isJobType(type)) {
    throw new AppError(ERROR_CODES.unknownJobType, `unknown job type "${type}"`, {
      statusCode: 400,
      details: { type, known: Object.keys(PIPELINES) },
    });
  }
  return PIPELINES[type];
}

/** One lookup of a job: the pipeline, and the header of its key column if the caller named one. */
export interface JobLookup {
  readonly pipeline: Pipeline;
  readonly column: string | undefined;
}

/** How a job asks for its lookups: one type with an optional column, or a list of several. */
export interface LookupOptions {
  readonly column?: string | undefined;
  readonly lookups?: ReadonlyArray<{ readonly type: string; readonly column?: string | undefined }> | undefined;
}

/** A job's lookups, in output order. A job with several names them in `options.lookups`. */
export function jobLookups(type: string, options: LookupOptions): JobLookup[] {
  if (options.lookups && options.lookups.length > 0) return options.lookups.map((l) => ({ pipeline: pipelineFor(l.type), column: l.column }));
  return [{ pipeline: pipelineFor(type), column: options.column }];
}

/**
 * Reads what a caller asked for into a job's type and lookups: either `type` alone (`gender`, or
 * several joined by commas, `gender,company`, each on its own default column), or `lookup` specs,
 * one per lookup, each `TYPE` or `TYPE:COLUMN` (the column may hold any character, `:` included).
 * A single lookup keeps the plain form (`type` and `column`), so that single jobs look as before.
 */
export function parseLookups(input: { type?: string | undefined; column?: string | undefined; lookup?: readonly string[] | undefined }): {
  type: string;
  column?: string;
  lookups?: { type: string; column?: string }[];
} {
  const specs = input.lookup ?? [];
  let requested: { type: string; column?: string }[];
  if (specs.length > 0) {
    if (input.column !== undefined) throw badLookups('column names the key of a one-lookup job; with lookup, write each column as TYPE:COLUMN');
    requested = specs.map((spec) => {
      const colon = spec.indexOf(':');
      const type = (colon < 0 ? spec : spec.slice(0, colon)).trim();
      const column = colon < 0 ? undefined : spec.slice(colon + 1).trim();
      if (column === '') throw badLookups(`lookup "${spec.slice(0, 60)}" names an empty column`);
      return column === undefined ? { type } : { type, column };
    });
    if (input.type !== undefined && input.type.split(',').map((t) => t.trim()).join(',') !== requested.map((r) => r.type).join(',')) {
      throw badLookups('type and lookup disagree; give lookup alone');
    }
  } else {
    if (input.type === undefined || input.type.trim() === '') throw badLookups('type is required');
    requested = input.type.split(',').map((t) => ({ type: t.trim() }));
    if (requested.length > 1 && input.column !== undefined) {
      throw badLookups('column names the key of a one-lookup job; for several lookups, give each as lookup=TYPE:COLUMN');
    }
  }
  for (const r of requested) pipelineFor(r.type);
  const types = requested.map((r) => r.type);
  const repeated = types.find((t, i) => types.indexOf(t) !== i);
  if (repeated !== undefined) throw badLookups(`lookup ${repeated} is asked for twice; a job runs each lookup once`);
  if (requested.length === 1) {
    const column = requested[0]!.column ?? input.column;
    return column === undefined ? { type: types[0]! } : { type: types[0]!, column };
  }
  return { type: types.join(','), lookups: requested };
}

function badLookups(message: string): AppError {
  return new AppError(ERROR_CODES.badArgument, message, { statusCode: 422 });
}
