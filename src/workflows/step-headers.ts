import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { StepDefinition } from './step-definition.js';

/**
 * A webhook step's extra headers (docs/workflows.md, "Secrets"): `config.headers` maps a header
 * name to a text that may reference the account's secrets as `{{secrets.NAME}}`. The definition
 * keeps the references only; the sender replaces them with the values at send time, so a value is
 * never in a definition, a run's input or outputs, a log line or a delivery record.
 */
export const MAX_STEP_HEADERS = 20;
const MAX_HEADER_CHARS = 4096;
const HEADER_NAME = /^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}$/;
export const SECRET_REFERENCE = /\{\{\s*secrets\.([A-Za-z][A-Za-z0-9_]{0,63})\s*\}\}/g;
/** Headers the sender sets itself (signatures, ids, framing): a step may not replace them. */
const RESERVED = /^(content-type|content-length|host|user-agent|idempotency-key|transfer-encoding|connection|webhook-.*|x-sluice-.*)$/i;

function refuse(step: string, message: string): never {
  throw new AppError(ERROR_CODES.invalidWorkflow, `step ${step}: ${message}`, { statusCode: 422, details: { step } });
}

/** Checks `config.headers` of a webhook step; returns the secret names it references. */
export function checkStepHeaders(step: StepDefinition): string[] {
  const headers = step.config.headers;
  if (headers === undefined) return [];
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) refuse(step.id, 'config.headers is an object of header name to text');
  const entries = Object.entries(headers);
  if (entries.length > MAX_STEP_HEADERS) refuse(step.id, `config.headers has at most ${MAX_STEP_HEADERS} headers`);
  const names: string[] = [];
  for (const [name, value] of entries) {
    if (!HEADER_NAME.test(name)) refuse(step.id, `config.headers: ${JSON.stringify(name.slice(0, 100))} is not a header name`);
    if (RESERVED.test(name)) refuse(step.id, `config.headers: ${name} is set by Sluice`);
    if (typeof value !== 'string' || value.length > MAX_HEADER_CHARS || /[\r\n\0]/.test(value)) refuse(step.id, `config.headers.${name} is text of at most ${MAX_HEADER_CHARS} characters on one line`);
    for (const match of value.matchAll(SECRET_REFERENCE)) names.push(match[1]!);
    if (value.replace(SECRET_REFERENCE, '').includes('{{')) refuse(step.id, `config.headers.${name}: a reference is {{secrets.NAME}}`);
  }
  return names;
}

/** Every secret the steps reference, with the step that does, for the check at save. */
export function secretReferences(steps: readonly StepDefinition[]): { step: string; name: string }[] {
  return steps.filter((s) => s.type === 'webhook').flatMap((s) => checkStepHeaders(s).map((name) => ({ step: s.id, name })));
}

/** 422 unknown_workflow_secret for the first reference to a secret the account does not have. */
export async function requireSecrets(secretNames: () => Promise<Set<string>>, steps: readonly StepDefinition[]): Promise<void> {
  const refs = secretReferences(steps);
  if (refs.length === 0) return;
  const known = await secretNames();
  const missing = refs.find((r) => !known.has(r.name));
  if (missing) throw new AppError(ERROR_CODES.unknownWorkflowSecret, `step ${missing.step}: the account has no secret ${missing.name}`, { statusCode: 422, details: { step: missing.step, secret: missing.name } });
}

