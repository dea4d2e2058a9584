import { request, type Dispatcher } from 'undici';
import table from './rules/validators.json' with { type: 'json' };
import type { CredentialValidator, Validation } from './credential-validator.js';

interface ProviderCall {
  method: 'GET' | 'POST';
  url: string;
  auth: string;
  live?: number[];
  revoked?: number[];
  liveJson?: Record<string, unknown>;
  revokedJson?: Record<string, unknown>;
}

const PROVIDERS = table.providers as Record<string, ProviderCall>;
const RULES = table.rules as Record<string, string>;
/** A provider's answer is read only this far: a "who am I" reply is small, and a hostile one must not fill memory. */
const MAX_BODY = 16 * 1024;

export interface HttpValidatorOptions {
  /** undici dispatcher that applies the webhook address policy to every connection. */
  readonly dispatcher: Dispatcher;
  readonly timeoutMs: number;
  /** Tests only: every call goes to this origin (a loopback fake) instead of the provider's. */
  readonly originOverride?: string | undefined;
}

/**
 * Validation through each provider's harmless identity call (rules/validators.json): live,
 * revoked, or unknown when the provider answered anything else, timed out, or could not be reached
 * under the address policy. Never throws, never retries (a retry would double calls made with
 * someone else's credential), never follows redirects (undici's request does not), never logs the
 * credential.
 */
export class HttpCredentialValidator implements CredentialValidator {
  constructor(private readonly options: HttpValidatorOptions) {}

  static supports(ruleId: string): boolean {
    return RULES[ruleId] !== undefined;
  }

  async validate(ruleId: string, secret: string, now: () => number): Promise<Validation> {
    const provider = RULES[ruleId];
    const call = provider === undefined ? undefined : PROVIDERS[provider];
    if (!call) return { status: 'not_checked', confidence: null, checked_at: null };
    const at = new Date(now()).toISOString();
    const url = this.options.originOverride ? new URL(new URL(call.url).pathname, this.options.originOverride).toString() : call.url;
    try {
      const response = await request(url, {
        method: call.method,
        headers: { ...authHeader(call.auth, secret), 'user-agent': 'sluice-credential-check' },
        dispatcher: this.options.dispatcher,
        signal: AbortSignal.timeout(this.options.timeoutMs),
      });
      const body = await readLimited(response.body);
      return { ...verdict(call, response.statusCode, body), checked_at: at };
    } catch {
      return { status: 'unknown', confidence: 0, checked_at: at };
    }
  }
}

function authHeader(auth: string, secret: string): Record<string, string> {
  if (auth === 'bearer') return { authorization: `Bearer ${secret}` };
  if (auth === 'basic-user') return { authorization: `Basic ${Buffer.from(`${secret}:`).toString('base64')}` };
  if (auth.startsWith('header:')) return { [auth.slice('header:'.length).toLowerCase()]: secret };
  return {};
}

function verdict(call: ProviderCall, status: number, body: string): Omit<Validation, 'checked_at'> {
  if (call.liveJson || call.revokedJson) {
    let parsed: Record<string, unknown> | undefined;
    try {
      parsed = JSON.parse(body) as Record<string, unknown>;
    } catch {
      return { status: 'unknown', confidence: 0 };
    }
    if (status === 200 && call.liveJson && matches(parsed, call.liveJson)) return { status: 'live', confidence: 1 };
    if (call.revokedJson && matches(parsed, call.revokedJson)) return { status: 'revoked', confidence: 0.9 };
    return { status: 'unknown', confidence: 0 };
  }
  if (call.live?.includes(status)) return { status: 'live', confidence: 1 };
  // 401 says the provider refused this credential; it may also be a credential for another region or tenant.
  if (call.revoked?.includes(status)) return { status: 'revoked', confidence: 0.9 };
  return { status: 'unknown', confidence: 0 };
}

function matches(value: Record<string, unknown> | undefined, expected: Record<string, unknown>): boolean {
  return value !== undefined && Object.entries(expected).every(([k, v]) => value[k] === v);
}

async function readLimited(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= MAX_BODY) break;
  }
  body.destroy();
  return Buffer.concat(chunks).subarray(0, MAX_BODY).toString('utf8');
}
