/**
 * A lookup served by a remote HTTP service instead of an embedded engine.
 *
 * Protocol (one batch per request):
 *
 *   POST {baseUrl}/v1/lookups/{kind}
 *   Authorization: {authHeader}                      (when configured)
 *   Content-Type: application/json
 *   { "keys": ["k1", "k2", ...] }                    normalised keys, at most maxBatch
 *
 *   200 { "results": [ { "ok": true, "result": {...} }
 *                    | { "ok": false, "code": "...", "retryable": bool, "message": "..." } ] }
 *       one entry per key, in key order
 *   429, 5xx          try again later; Retry-After (seconds or an HTTP date) is passed on
 *   other 4xx         the request itself is refused; trying again cannot help
 */
import { Pool } from 'undici';
import { AppError, ERROR_CODES, systemCodeOf, toAppError } from '../../shared/errors.js';
import { parseRetryAfter } from '../../shared/retry-after.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { BREAKER_STATES, CircuitBreaker, type BreakerState } from './circuit-breaker.js';

const TIMEOUT_CODES = new Set(['UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'UND_ERR_CONNECT_TIMEOUT']);

/** A provider refused the request (401, 403, 404, 400...): final for every key of the batch. */
export const LOOKUP_REJECTED = 'lookup_rejected';

export interface RemoteProviderOptions {
  kind: string;
  /** For limits and logs; default `remote-{kind}`. */
  name?: string;
  /** e.g. `https://lookups.example.com` or with a path prefix `https://example.com/svc`. */
  baseUrl: string;
  /** The whole Authorization header value, e.g. `Bearer ...`. Never logged nor put in messages. */
  authHeader?: string;
  /** Per HTTP request: to connect, for the answer's headers, and between chunks of its body. */
  timeoutMs: number;
  /** Keep-alive connections to the service; also the most requests in flight at once. */
  connections: number;
  maxBatch?: number;
  /** Shared by every call; a default one (5 failures, 5 s open) when not given. */
  breaker?: CircuitBreaker;
}

type Attempt<R> =
  | { kind: 'answer'; outcomes: LookupOutcome<R>[] }
  | { kind: 'rejected'; status: number }
  | { kind: 'retry'; status: number | undefined; retryAfterMs: number | undefined; message: string }
  | { kind: 'aborted' };

/**
 * Sends each batch as one request through a keep-alive undici Pool. 429, 5xx, network errors,
 * time-outs and malformed answers come back as retryable outcomes, with the service's Retry-After
 * (`provider_unavailable` when the service says 503 or the breaker is open, so that the engine
 * pauses the job instead of failing its rows); `lookupBatch` decides whether to try again. Never
 * throws: a breaker whose store cannot be reached fails the keys, retryable, as a network error would.
 */
export class RemoteLookupProvider<R = unknown> implements LookupProvider<R> {
  readonly kind: string;
  readonly name: string;
  readonly maxBatch: number;
  readonly breaker: CircuitBreaker;
  private readonly pool: Pool;
  private readonly path: string;
  private readonly headers: Record<string, string>;
  private readonly timeoutMs: number;
  private closed = false;

  constructor(options: RemoteProviderOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch (e: unknown) {
      throw new AppError(ERROR_CODES.badConfig, `lookup provider base URL is not a URL: ${options.baseUrl}`, { cause: e });
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new AppError(ERROR_CODES.badConfig, `lookup provider base URL must be http or https: ${url.origin}`);
    }
    for (const [key, value, min] of [['timeoutMs', options.timeoutMs, 1], ['connections', options.connections, 1], ['maxBatch', options.maxBatch, 1]] as const) {
      if (value !== undefined && !(Number.isInteger(value) && value >= min)) throw new AppError(ERROR_CODES.badConfig, `lookup provider ${key} must be an integer >= ${min}`);
    }
    this.kind = options.kind;
    this.name = options.name ?? `remote-${options.kind}`;
    this.maxBatch = options.maxBatch ?? 100;
    this.breaker = options.breaker ?? new CircuitBreaker();
    this.pool = new Pool(url.origin, { connections: options.connections, connect: { timeout: options.timeoutMs } });
    this.path = `${url.pathname.replace(/\/+$/, '')}/v1/lookups/${encodeURIComponent(options.kind)}`;
    this.headers = {
      'content-type': 'application/json',
      accept: 'application/json',
      ...(options.authHeader === undefined ? {} : { authorization: options.authHeader }),
    };
    this.timeoutMs = options.timeoutMs;
  }

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<R>[]> {
    if (keys.length === 0) return [];
    if (signal?.aborted) return failAll(keys, ERROR_CODES.lookupFailed, true, 'lookup aborted');
    if (this.closed) return failAll(keys, ERROR_CODES.lookupFailed, true, `${this.name} is closed`);
    try {
      return await this.guarded(keys, signal);
    } catch (e: unknown) {
      return failAll(keys, ERROR_CODES.lookupFailed, true, `${this.name}: circuit breaker unreachable: ${toAppError(e).message}`);
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.pool.close();
  }

  /** One request under the breaker, which lives in the store and may be unreachable. */
  private async guarded(keys: readonly string[], signal: AbortSignal | undefined): Promise<LookupOutcome<R>[]> {
    if (!(await this.breaker.tryAcquire())) return failAll(keys, ERROR_CODES.providerUnavailable, true, `${this.name}: circuit breaker open`);
    const result = await this.post(JSON.stringify({ keys }), keys.length, signal);
    switch (result.kind) {
      case 'answer':
        await this.breaker.recordSuccess();
        return result.outcomes;
      case 'rejected':
        // The service is up and answering; the request is what it refuses.
        await this.breaker.recordSuccess();
        return failAll(keys, LOOKUP_REJECTED, false, `${this.name} refused the request with ${result.status}`);
      case 'aborted':
        await this.breaker.release();
        return failAll(keys, ERROR_CODES.lookupFailed, true, 'lookup aborted');
      case 'retry': {
        // A 429 says the service is up but wants us slower: it must not open the breaker.
        let state: BreakerState = BREAKER_STATES.closed;
        if (result.status === 429) await this.breaker.recordSuccess();
        else state = await this.breaker.recordFailure(); // the state the failure left: no second read of the store
        const unavailable = result.status === 503 || state === BREAKER_STATES.open;
        const failed = failAll<R>(keys, unavailable ? ERROR_CODES.providerUnavailable : ERROR_CODES.lookupFailed, true, `${this.name}: ${result.message}`);
        return result.retryAfterMs === undefined ? failed : failed.map((o) => ({ ...o, retryAfterMs: result.retryAfterMs }) as LookupOutcome<R>);
      }
    }
  }

  private async post(body: string, count: number, signal: AbortSignal | undefined): Promise<Attempt<R>> {
    try {
      // undici's own per-request timers, not AbortSignal.timeout + AbortSignal.any: those two signals
      // per request cost about 30 µs of CPU each and leave a pending timer behind every call.
      const response = await this.pool.request({
        method: 'POST',
        path: this.path,
        headers: this.headers,
        body,
        headersTimeout: this.timeoutMs,
        bodyTimeout: this.timeoutMs,
        ...(signal ? { signal } : {}),
      });
      const status = response.statusCode;
      if (status === 200) {
        const parsed = parseAnswer<R>(await response.body.text(), count);
        return typeof parsed === 'string' ? { kind: 'retry', status, retryAfterMs: undefined, message: parsed } : { kind: 'answer', outcomes: parsed };
      }
      // Read the rest of the answer so that the connection goes back to the pool instead of being closed.
      await response.body.dump();
      if (status === 429 || status >= 500) {
        return { kind: 'retry', status, retryAfterMs: parseRetryAfter(response.headers['retry-after']), message: `answered ${status}` };
      }
      return { kind: 'rejected', status };
    } catch (e: unknown) {
      if (signal?.aborted) return { kind: 'aborted' };
      if (TIMEOUT_CODES.has(systemCodeOf(e) ?? '')) return { kind: 'retry', status: undefined, retryAfterMs: undefined, message: `no answer within ${this.timeoutMs} ms` };
      return { kind: 'retry', status: undefined, retryAfterMs: undefined, message: toAppError(e).message };
    }
  }
}

/** The outcomes of a 200 answer, or why it cannot be trusted. */
function parseAnswer<R>(text: string, count: number): LookupOutcome<R>[] | string {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return 'answered 200 with a body that is not JSON';
  }
  const results = (json as { results?: unknown } | null)?.results;
  if (!Array.isArray(results)) return 'answered 200 without a results array';
  if (results.length !== count) return `answered ${results.length} results for ${count} keys`;
  const outcomes: LookupOutcome<R>[] = [];
  for (const item of results as unknown[]) {
    const entry = item as Record<string, unknown> | null;
    if (entry?.ok === true && typeof entry.result === 'object' && entry.result !== null) {
      outcomes.push({ ok: true, result: entry.result as R });
    } else if (entry?.ok === false && typeof entry.code === 'string' && typeof entry.retryable === 'boolean') {
      outcomes.push({ ok: false, retryable: entry.retryable, code: entry.code, message: typeof entry.message === 'string' ? entry.message : entry.code });
    } else {
      return 'answered 200 with a malformed result';
    }
  }
  return outcomes;
}

function failAll<R>(keys: readonly string[], code: string, retryable: boolean, message: string): LookupOutcome<R>[] {
  return keys.map(() => ({ ok: false, retryable, code, message }));
}
