import { ERROR_CODES } from '../../shared/errors.js';
import { WEBHOOK_EVENTS, WEBHOOK_KINDS, type WebhookKind } from '../../webhooks/webhook-store.js';
import { httpError } from '../errors.js';

const EVENTS: readonly string[] = Object.values(WEBHOOK_EVENTS);
const KINDS: readonly string[] = Object.values(WEBHOOK_KINDS);

/**
 * Webhook bodies are read by hand rather than by schema, because the spec answers a missing id
 * with 400 `bad_request` while a field of the wrong type is a 422; a schema gives one status.
 */
export class WebhookBody {
  private readonly fields: Record<string, unknown>;

  constructor(body: unknown) {
    if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body))) {
      throw invalid('body must be a JSON object');
    }
    this.fields = (body ?? {}) as Record<string, unknown>;
  }

  has(name: string): boolean {
    return this.fields[name] !== undefined && this.fields[name] !== null;
  }

  /** A required string: missing is a 400, as the spec says of `id`. */
  required(name: string): string {
    const value = this.optionalString(name);
    if (value === undefined || value.trim() === '') throw httpError(400, ERROR_CODES.badRequest, `${name} is required`);
    return value.trim();
  }

  optionalString(name: string, maxLength = 2048): string | undefined {
    if (!this.has(name)) return undefined;
    const value = this.fields[name];
    if (typeof value !== 'string') throw invalid(`${name} must be a string`);
    if (value.length > maxLength) throw invalid(`${name} is longer than ${maxLength} characters`);
    return value;
  }

  optionalBoolean(name: string): boolean | undefined {
    if (!this.has(name)) return undefined;
    const value = this.fields[name];
    if (typeof value !== 'boolean') throw invalid(`${name} must be true or false`);
    return value;
  }

  /** Whole seconds from 0 to `max`. */
  optionalSeconds(name: string, max: number): number | undefined {
    if (!this.has(name)) return undefined;
    const value = this.fields[name];
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) throw invalid(`${name} must be a whole number from 0 to ${max}`);
    return value;
  }

  events(): string[] | undefined {
    if (!this.has('events')) return undefined;
    const value = this.fields.events;
    if (!Array.isArray(value) || value.length === 0 || value.some((e) => typeof e !== 'string' || !EVENTS.includes(e))) {
      throw invalid(`events must be a non-empty list of: ${EVENTS.join(', ')}`);
    }
    return [...new Set(value as string[])];
  }

  kind(): WebhookKind {
    const kind = this.optionalString('kind') ?? WEBHOOK_KINDS.generic;
    if (!KINDS.includes(kind)) throw invalid(`kind must be one of ${KINDS.join(', ')}`);
    return kind as WebhookKind;
  }
}

function invalid(problem: string) {
  return httpError(422, ERROR_CODES.invalidRequest, `Invalid request: ${problem}`);
}
