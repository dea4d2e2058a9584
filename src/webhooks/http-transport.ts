import { Agent, request } from 'undici';
import { ERROR_CODES, isAppError, type ErrorCode } from '../shared/errors.js';
import { parseRetryAfter } from '../shared/retry-after.js';
import type { AddressPolicy } from './address-policy.js';
import { guardedConnector } from './guarded-connector.js';

/** The spec keeps 512 bytes of a receiver's answer; so do the delivery records. */
export const RESPONSE_BODY_BYTES = 512;

export type PostResult =
  | { kind: 'response'; status: number; body: string | null; retryAfterMs: number | undefined }
  | { kind: 'error'; code: ErrorCode };

export interface PostRequest {
  url: string;
  body: Buffer;
  headers: Record<string, string>;
  timeoutMs: number;
}

/**
 * POSTs over undici with the SSRF rules applied where they cannot be dodged: names are resolved by
 * a lookup that refuses non-public answers, IP literals are checked before connecting, and the
 * socket's remote address is checked once more after connecting. Redirects are never followed.
 */
export class HttpTransport {
  private readonly agent: Agent;

  constructor(policy: AddressPolicy | undefined, tls: { ca?: string } = {}) {
    this.agent = new Agent({ connect: guardedConnector(policy, tls), keepAliveTimeout: 4_000, connections: 16 });
  }

  async post(req: PostRequest): Promise<PostResult> {
    const signal = AbortSignal.timeout(req.timeoutMs);
    try {
      const response = await request(req.url, { method: 'POST', body: req.body, headers: req.headers, dispatcher: this.agent, signal });
      const body = await readLimited(response.body, RESPONSE_BODY_BYTES);
      return { kind: 'response', status: response.statusCode, body, retryAfterMs: parseRetryAfter(response.headers['retry-after']) };
    } catch (e: unknown) {
      if (signal.aborted) return { kind: 'error', code: ERROR_CODES.deliveryTimeout };
      return { kind: 'error', code: blockedCause(e) ? ERROR_CODES.blockedAddress : ERROR_CODES.deliveryUnreachable };
    }
  }

  async close(): Promise<void> {
    await this.agent.close();
  }
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy(): unknown }, limit: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    // A receiver that streams forever must not hold the attempt open or fill memory.
    if (size >= limit) break;
  }
  body.destroy();
  const text = Buffer.concat(chunks).subarray(0, limit).toString('utf8');
  return text === '' ? null : text;
}

function blockedCause(e: unknown): boolean {
  let current: unknown = e;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (isAppError(current, ERROR_CODES.blockedAddress)) return true;
    current = current.cause;
  }
  return false;
}
