import { randomUUID } from 'node:crypto';
import type { Pipeline } from '../../pipelines/pipeline.js';
import { DAY_MS } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { OutboxEvent } from '../storage/records.js';
import type { LookupCharge } from '../storage/store.js';
import { WEBHOOK_EVENTS } from '../webhooks/webhook-store.js';
import type { EngineDeps } from './engine-deps.js';
import { lookupBatch, type LookupBatchOptions } from './lookup-batch.js';
import type { LookupOutcome } from '../lookups/lookup-provider.js';

export type SingleLookup<R> =
  | { ok: true; key: string; result: R; credits: number; cached: boolean }
  | { ok: false; reason: 'invalid'; code: string }
  | { ok: false; reason: 'insufficient_credits' }
  | { ok: false; reason: 'unavailable' }
  /** `outcome`: the provider's failure as given, for a route that shows more than its code (validity's `retry_after`). */
  | { ok: false; reason: 'failed'; code: string; outcome?: LookupOutcome<unknown> };

/**
 * Per call, at a price the answer sets (the company search: 1 credit per result returned).
 * `price` gets the answer and the credits the account has free, and returns the answer to give
 * and what it costs, or undefined when the account cannot pay for it.
 */
export interface PricedCall<R> {
  price(result: R, available: number): { result: R; credits: number } | undefined;
}

/**
 * One lookup for the single endpoints, on the same billing cache and result cache as bulk jobs:
 * an address a job paid for is a free repeat here, and the other way round. A failed lookup is
 * never charged; the charge commits in one store operation with the result it pays for.
 */
export async function singleLookup<R>(
  deps: EngineDeps,
  pipeline: Pipeline<R>,
  accountId: string,
  raw: string,
  /**
   * `per_call`: every call costs 1, as the agent endpoints charge; a PricedCall: the price the
   * answer sets; else (`repeat_free`) repeats in the window are free.
   */
  billing: 'repeat_free' | 'per_call' | PricedCall<R> = 'repeat_free',
  /**
   * `announce: false`: no `lookup.completed` event, for a lookup whose key must not leave Sluice
   * (a password's SHA-1 would be sent to every subscribed webhook). Default: announced.
   *
   * `signal`, `attempts`, `backoffMs`: a deadline and fewer tries, for an endpoint that must answer
   * in time.
   */
  options: { announce?: boolean } & Pick<LookupBatchOptions, 'signal' | 'attempts' | 'backoffMs'> = {},
): Promise<SingleLookup<R>> {
  const { announce, ...tries } = options;
  const normalised = pipeline.normalise(raw);
  if (!normalised.ok) return { ok: false, reason: 'invalid', code: normalised.code };
  const { key } = normalised;
  const kind = pipeline.lookupKind;
  const provider = deps.providers.get(kind);
  if (!provider) return { ok: false, reason: 'unavailable' };
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
  const repeat = billing === 'repeat_free' && (await deps.billing.freshlyBilled(accountId, kind, [key], since)).has(key);
  const available = await deps.billing.available(accountId);
  if (!repeat && available <= 0) return { ok: false, reason: 'insufficient_credits' };

  const cached = provider.answersLocally ? undefined : (await deps.results.getMany<R>(kind, [key], since)).get(key);
  let result = cached;
  if (result === undefined) {
    const outcome = (await lookupBatch([key], { accountId, provider, limiters: deps.limiters, ...tries })).get(key)!;
    if (!outcome.ok) {
      // A provider that is down is "temporarily unavailable" (503), not a failed lookup (502).
      return outcome.code === ERROR_CODES.providerUnavailable ? { ok: false, reason: 'unavailable' } : { ok: false, reason: 'failed', code: outcome.code, outcome };
    }
    result = outcome.result as R;
  }
  let answer = result as R;
  let charge: LookupCharge;
  if (billing === 'per_call') charge = { type: 'flat', amount: 1, callId: randomUUID() };
  else if (billing === 'repeat_free') charge = { type: 'repeat_free', key, since, batchId: randomUUID() };
  else {
    // Priced on what the account had free before the lookup; the charge itself is all or nothing.
    const priced = billing.price(answer, available);
    if (priced === undefined) return { ok: false, reason: 'insufficient_credits' };
    answer = priced.result;
    charge = { type: 'flat', amount: priced.credits, callId: randomUUID() };
  }
  const now = deps.clock.now();
  const committed = await deps.billing.commitLookup({
    accountId,
    kind,
    charge,
    cache: cached === undefined && !provider.answersLocally ? [{ kind, key, result }] : [],
    // A free repeat announces nothing: the paid lookup of the key already did, and repeats would let
    // an account multiply events (and their POSTs) at no cost.
    ...(repeat || announce === false ? {} : { event: (credits: number) => lookupEvent(accountId, kind, key, answer, credits, now) }),
    now,
  });
  if (!committed.ok) return { ok: false, reason: 'insufficient_credits' };
  return { ok: true, key, result: answer, credits: committed.credits, cached: cached !== undefined };
}

/** `lookup.completed`: the looked-up target and its answer, for accounts that subscribe to it. */
function lookupEvent(accountId: string, lookup: string, target: string, result: unknown, credits: number, now: number): OutboxEvent {
  return {
    id: `evt_${randomUUID()}`,
    event: WEBHOOK_EVENTS.lookupCompleted,
    accountId,
    payload: { event: WEBHOOK_EVENTS.lookupCompleted, data: { lookup, target, result, credits }, created_at: new Date(now).toISOString() },
  };
}

export function assertNever(value: never): never {
  throw new AppError(ERROR_CODES.internal, `unexpected ${String(value)}`);
}
