import type { LookupOutcome, LookupProvider } from '../lookups/lookup-provider.js';
import type { Limiters } from '../lookups/limiters.js';
import { toAppError } from '../shared/errors.js';
import { sleep } from '../shared/sleep.js';

export interface LookupBatchOptions {
  accountId: string;
  provider: LookupProvider;
  limiters: Limiters;
  signal?: AbortSignal;
  /** Tries per key for failures the provider calls retryable. */
  attempts?: number;
  backoffMs?: number;
}

/**
 * Looks up distinct keys in provider-sized slices, all slices at once under the account's and the
 * provider's limiters. Retryable failures are tried again with backoff; what still fails comes back
 * as a failed outcome (the row becomes `error`, uncharged), never as an exception.
 */
export async function lookupBatch(keys: readonly string[], options: LookupBatchOptions): Promise<Map<string, LookupOutcome<unknown>>> {
  const { provider, limiters, accountId, signal } = options;
  const attempts = options.attempts ?? 3;
  const backoffMs = options.backoffMs ?? 200;
  const answers = new Map<string, LookupOutcome<unknown>>();
  let pending = [...keys];
  for (let attempt = 1; pending.length > 0; attempt++) {
    const slices: string[][] = [];
    for (let i = 0; i < pending.length; i += provider.maxBatch) slices.push(pending.slice(i, i + provider.maxBatch));
    const outcomes = await Promise.all(
      slices.map((slice) => limiters.run(accountId, provider.name, () => callProvider(provider, slice, signal))),
    );
    const retry: string[] = [];
    slices.forEach((slice, s) => {
      slice.forEach((key, k) => {
        const outcome = outcomes[s]![k]!;
        if (!outcome.ok && outcome.retryable && attempt < attempts) retry.push(key);
        else answers.set(key, outcome);
      });
    });
    pending = retry;
    if (pending.length > 0) await sleep(backoffMs * 2 ** (attempt - 1), signal);
  }
  return answers;
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
