import { AppError, ERROR_CODES } from '../src/shared/errors.js';
import { companyPipeline } from './company.js';
import { genderPipeline } from './gender.js';
import { phoneBreachesPipeline } from './phone-breaches.js';
import type { Pipeline } from './pipeline.js';

/** Every job type, listed by hand so that adding one is a visible, reviewed change. */
export const PIPELINES = {
  gender: genderPipeline,
  phone_breaches: phoneBreachesPipeline,
  company: companyPipeline,
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
