import type { LookupOutcome, LookupProvider } from '../lookups/lookup-provider.js';
import type { Limiters } from '../lookups/limiters.js';
import { toAppError } from '../shared/errors.js';
import { sleep } from '../shared/sleep.js';

export interface LookupBatchOptions {
  accountId: string;
  provider: LookupProvider;
  limiters: Limiters;
  signal?: AbortSignal;
  /** Tries per key for failures the provider calls retryable, the first included. */
  attempts?: number;
  /** First pause between tries, doubled each time and jittered. */
  backoffMs?: number;
  /** A Retry-After longer than this is cut to it. */
  maxRetryAfterMs?: number;
}

/**
 * Looks up distinct keys in provider-sized slices, all slices at once under the account's and the
 * provider's limiters. This is the one place a lookup is tried again: retryable failures get more
 * attempts after a backoff, or after the longest Retry-After the service gave (outside the
 * limiters, so a waiting batch holds no slot); what still fails comes back as a failed outcome (the
 * row becomes `error`, uncharged, or the job pauses for `provider_unavailable`), never as an
 * exception.
 */
export async function lookupBatch(keys: readonly string[], options: LookupBatchOptions): Promise<Map<string, LookupOutcome<unknown>>> {
  const { provider, limiters, accountId, signal } = options;
  const attempts = options.attempts ?? DEFAULT_ATTEMPTS;
  const backoffMs = options.backoffMs ?? 100;
  const maxRetryAfterMs = options.maxRetryAfterMs ?? 30_000;
  const answers = new Map<string, LookupOutcome<unknown>>();
  let pending = [...keys];
  const last = new Map<string, LookupOutcome<unknown>>();
  for (let attempt = 1; pending.length > 0; attempt++) {
    const slices: string[][] = [];
    for (let i = 0; i < pending.length; i += provider.maxBatch) slices.push(pending.slice(i, i + provider.maxBatch));
    const outcomes = await Promise.all(
      slices.map((slice) => limiters.run(accountId, provider, () => callProvider(provider, slice, signal))),
    );
    const retry: string[] = [];
    let retryAfterMs: number | undefined;
    // Once stopped (a deadline, a lost lease), the last answer stands: another try could only fail
    // for the stop itself and hide why the key failed.
    const stopped = signal?.aborted === true;
    slices.forEach((slice, s) => {
      slice.forEach((key, k) => {
        const outcome = outcomes[s]![k]!;
        if (!outcome.ok && outcome.retryable && attempt < attempts && !stopped) {
          retry.push(key);
          last.set(key, outcome);
          if (outcome.retryAfterMs !== undefined) retryAfterMs = Math.max(retryAfterMs ?? 0, outcome.retryAfterMs);
        } else answers.set(key, outcome);
      });
    });
    pending = retry;
    if (pending.length > 0) await sleep(retryDelayMs(attempt, backoffMs, retryAfterMs, maxRetryAfterMs), signal);
    if (signal?.aborted) {
      for (const key of pending) answers.set(key, last.get(key)!);
      pending = [];
    }
  }
  return answers;
}

/**
 * Tries per key by default. Before there was one retry layer, a remote lookup was tried 3 times
 * inside the provider for each of 3 tries here, 9 in all; 8 keeps a provider that fails one request
 * in five from turning rows into errors, and a doubling wait capped at 2 s keeps an outage from
 * holding a batch more than about 7 s before the job pauses for it.
 */
const DEFAULT_ATTEMPTS = 8;
const MAX_BACKOFF_MS = 2_000;

function retryDelayMs(attempt: number, backoffMs: number, retryAfterMs: number | undefined, maxRetryAfterMs: number): number {
  if (retryAfterMs !== undefined) return Math.min(retryAfterMs, maxRetryAfterMs);
  const base = Math.min(MAX_BACKOFF_MS, backoffMs * 2 ** (attempt - 1));
  // Jitter keeps many batches that failed together from all coming back in the same instant.
  return base / 2 + Math.random() * (base / 2);
}

async function callProvider(provider: LookupProvider, keys: string[], signal?: AbortSignal): Promise<LookupOutcome<unknown>[]> {
  try {
    const outcomes = await provider.lookup(keys, signal);
    if (outcomes.length !== keys.length) throw new Error(`${provider.name} answered ${outcomes.length} of ${keys.length} keys`);
    return outcomes;
  } catch (e: unknown) {
    const error = toAppError(e);
    return keys.map(() => ({ ok: false as const, retryable: true, code: 'lookup_failed', message: error.message }));
  }
}
