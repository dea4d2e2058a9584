/**
 * The k-anonymity range protocol of a remote service (Have I Been Pwned's Pwned Passwords, a
 * mirror of it, or another Sluice's `/api/range`):
 *
 *   GET {baseUrl}/range/{prefix}          prefix: 5 uppercase hex digits, nothing else
 *   Add-Padding: true
 *   200 text/plain: SUFFIX:COUNT lines (35 hex digits), CRLF; count 0 rows are padding
 *   429, 5xx  try again later (Retry-After passed on); other 4xx: refused, final
 *
 * Same pattern as RemoteLookupProvider: a keep-alive undici Pool, undici's time-outs, the shared
 * circuit breaker, one attempt per call (lookupBatch is the one place that retries).
 */
import { Pool } from 'undici';
import { AppError, ERROR_CODES, systemCodeOf, toAppError } from '../../shared/errors.js';
import { parseRetryAfter } from '../../shared/retry-after.js';
import type { RangeRow } from '../password/password-range-format.js';
import { RANGE_SOURCES, type PasswordRangeSource, type RangeOutcome } from '../password/password-range-source.js';
import { BREAKER_STATES, CircuitBreaker, type BreakerState } from './circuit-breaker.js';
import { LOOKUP_REJECTED } from './remote-provider.js';

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);
const ROW = /^([0-9A-Fa-f]{35}):(\d{1,15})$/;
/** A range larger than this is no honest answer (HIBP's largest are a few thousand rows). */
const MAX_RANGE_BYTES = 4 << 20;

export interface RemotePasswordRangeOptions {
  baseUrl: string;
  /** The whole Authorization header value; never logged nor put in messages. */
  authHeader?: string;
  timeoutMs: number;
  connections: number;
  breaker?: CircuitBreaker;
}

export class RemotePasswordRange implements PasswordRangeSource {
  readonly name = RANGE_SOURCES.remoteRange;
  readonly breaker: CircuitBreaker;
  private readonly pool: Pool;
  private readonly basePath: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;

  constructor(options: RemotePasswordRangeOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch (e: unknown) {
      throw new AppError(ERROR_CODES.badConfig, 'SLUICE_PASSWORD_RANGE_URL is not a URL', { cause: e });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new AppError(ERROR_CODES.badConfig, 'SLUICE_PASSWORD_RANGE_URL must be http or https');
    this.breaker = options.breaker ?? new CircuitBreaker();
    this.pool = new Pool(url.origin, { connections: options.connections, connect: { timeout: options.timeoutMs } });
    this.basePath = url.pathname.replace(/\/+$/, '');
    this.headers = {
      accept: 'text/plain',
      'add-padding': 'true',
      'user-agent': 'sluice',
      ...(options.authHeader === undefined ? {} : { authorization: options.authHeader }),
    };
    this.timeoutMs = options.timeoutMs;
  }

  async range(prefix: string, signal?: AbortSignal): Promise<RangeOutcome> {
    // The one check that guards what leaves: whatever a caller passes, only 5 hex digits go out.
    if (!/^[0-9A-Fa-f]{5}$/.test(prefix)) return { ok: false, retryable: false, code: ERROR_CODES.invalidPrefix, message: 'a range prefix is 5 hex digits' };
    try {
      if (!(await this.breaker.tryAcquire())) return { ok: false, retryable: true, code: ERROR_CODES.providerUnavailable, message: 'password range service: circuit breaker open' };
    } catch (e: unknown) {
      return { ok: false, retryable: true, code: ERROR_CODES.lookupFailed, message: `circuit breaker unreachable: ${toAppError(e).message}` };
    }
    const attempt = await this.get(prefix.toUpperCase(), signal);
    if (attempt.ok) {
      await this.breaker.recordSuccess();
      return attempt;
    }
    if (attempt.code === 'aborted') {
      await this.breaker.release();
      return { ok: false, retryable: true, code: ERROR_CODES.lookupFailed, message: 'lookup aborted' };
    }
    if (attempt.code === LOOKUP_REJECTED || attempt.status === 429) {
      // Up and answering: a refusal or a request to slow down must not open the breaker.
      await this.breaker.recordSuccess();
      return attempt;
    }
    const state: BreakerState = await this.breaker.recordFailure();
    const unavailable = attempt.status === 503 || state === BREAKER_STATES.open;
    return { ...attempt, code: unavailable ? ERROR_CODES.providerUnavailable : attempt.code };
  }

  async close(): Promise<void> {
    await this.pool.close();
  }

  private async get(prefix: string, signal: AbortSignal | undefined): Promise<(RangeOutcome & { ok: true }) | ({ ok: false; retryable: boolean; code: string; message: string; retryAfterMs?: number; status?: number })> {
    try {
      const response = await this.pool.request({
        method: 'GET',
        path: `${this.basePath}/range/${prefix}`,
        headers: this.headers,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        ...(signal ? { signal } : {}),
      });
      const status = response.statusCode;
      if (status === 200) {
        const rows = parseRange(await readLimited(response.body));
        return typeof rows === 'string' ? { ok: false, retryable: true, code: ERROR_CODES.lookupFailed, message: `password range service ${rows}`, status } : { ok: true, rows };
      }
      await response.body.dump();
      if (status === 429 || status >= 500) {
        const retryAfterMs = parseRetryAfter(response.headers['retry-after']);
        return { ok: false, retryable: true, code: ERROR_CODES.lookupFailed, message: `password range service answered ${status}`, status, ...(retryAfterMs === undefined ? {} : { retryAfterMs }) };
      }
      return { ok: false, retryable: false, code: LOOKUP_REJECTED, message: `password range service refused the request with ${status}`, status };
    } catch (e: unknown) {
      if (signal?.aborted) return { ok: false, retryable: true, code: 'aborted', message: 'aborted' };
      const message = TIMEOUT_CODES.has(systemCodeOf(e) ?? '') ? `no answer within ${this.timeoutMs} ms` : toAppError(e).message;
      return { ok: false, retryable: true, code: ERROR_CODES.lookupFailed, message: `password range service: ${message}` };
    }
  }
}

async function readLimited(body: AsyncIterable<Buffer>): Promise<string | undefined> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const part of body) {
    size += part.length;
    if (size > MAX_RANGE_BYTES) return undefined;
    parts.push(part);
  }
  return Buffer.concat(parts).toString('latin1');
}

/** The real rows of a range answer (count 0 rows are padding), or what is wrong with it. */
export function parseRange(text: string | undefined): RangeRow[] | string {
  if (text === undefined) return `answered more than ${MAX_RANGE_BYTES} bytes`;
  const rows: RangeRow[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '') continue;
    const match = ROW.exec(line);
    if (!match) return 'answered a line that is not SUFFIX:COUNT';
    const count = Number(match[2]);
    if (count > 0) rows.push({ suffix: match[1]!.toUpperCase(), count });
  }
  return rows;
}
