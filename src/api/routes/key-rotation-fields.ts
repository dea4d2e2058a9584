import { ERROR_CODES } from '../../shared/errors.js';
import { httpError } from '../errors.js';

/**
 * The longest a rolled key keeps working beside its replacement: a week, as Stripe's longest
 * choice. Long enough to deploy the new key everywhere, short enough that a leaked key a roll was
 * meant to end does not live on for months.
 */
export const MAX_ROLL_GRACE_SECONDS = 7 * 86_400;
/** Without `grace_seconds`: a day, so a roll never breaks a running integration by surprise. */
export const DEFAULT_ROLL_GRACE_SECONDS = 86_400;
/** The furthest end a key may be given at creation. */
export const MAX_KEY_LIFETIME_MS = 5 * 366 * 86_400_000;

export const KEY_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** ISO 8601 with a date, a time and a zone (`Z` or an offset): a bare date leaves the zone to guess. */
const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})$/;

function fields(body: unknown): Record<string, unknown> {
  if (body === undefined || body === null) return {};
  if (typeof body !== 'object' || Array.isArray(body)) throw invalid('body must be a JSON object');
  return body as Record<string, unknown>;
}

function invalid(problem: string) {
  return httpError(422, ERROR_CODES.invalidRequest, `Invalid request: ${problem}`);
}

/** A new key's optional `expires_at`: an instant after `now` and within MAX_KEY_LIFETIME_MS of it. */
export function keyExpiry(body: unknown, now: number): number | null {
  const value = fields(body).expires_at;
  if (value === undefined || value === null) return null;
  if (typeof value !== 'string' || !ISO_INSTANT.test(value) || Number.isNaN(Date.parse(value))) {
    throw invalid('expires_at must be an ISO 8601 date and time with a zone, such as 2027-01-31T00:00:00Z');
  }
  const at = Date.parse(value);
  if (at <= now) throw invalid('expires_at must be in the future');
  if (at > now + MAX_KEY_LIFETIME_MS) throw invalid('expires_at must be within 5 years');
  return at;
}

/** A roll's `id` (required, 400 as the other key routes) and `grace_seconds` (0 to a week). */
export function rollRequest(body: unknown): { id: string; graceSeconds: number } {
  const f = fields(body);
  const id = f.id;
  if (id === undefined || id === null || id === '') throw httpError(400, ERROR_CODES.invalidRequest, 'id is required and must be a UUID');
  if (typeof id !== 'string' || !KEY_ID.test(id)) {
    throw httpError(400, ERROR_CODES.invalidRequest, 'id is required and must be a UUID');
  }
  const grace = f.grace_seconds ?? DEFAULT_ROLL_GRACE_SECONDS;
  if (typeof grace !== 'number' || !Number.isInteger(grace) || grace < 0 || grace > MAX_ROLL_GRACE_SECONDS) {
    throw invalid(`grace_seconds must be a whole number from 0 to ${MAX_ROLL_GRACE_SECONDS}`);
  }
  return { id, graceSeconds: grace };
}
