import { createHash } from 'node:crypto';
import { PIPELINES } from '../../pipelines/index.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import { lookupBatch } from '../jobs/lookup-batch.js';
import type { Limiters } from '../lookups/limiters.js';
import type { LookupProvider } from '../lookups/lookup-provider.js';
import { DAY_MS } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { chargeLedgerId } from '../storage/ledger-ids.js';
import type { Store } from '../storage/store.js';
import { LOOKUP_STEPS, type StepDefinition } from './definition.js';
import { DEFAULT_BUDGET, evaluate, type Budget } from './expression.js';

/** What a step needs from outside: the store (balances, webhooks), the lookups, a budget. */
export interface StepDeps {
  readonly store: Store;
  readonly providers: ReadonlyMap<string, LookupProvider>;
  readonly limiters: Limiters;
  readonly budget?: Budget;
  /** The repeat-free window (SLUICE_REPEAT_FREE_DAYS): a key the account paid for within it is free. */
  readonly repeatFreeDays: number;
}

export const WORKFLOW_STEP_EVENT = 'workflow.step';
/** A step's output, as JSON text, may be at most this long: outputs live on the run's row. */
export const MAX_OUTPUT_CHARS = 65_536;

/** What executing a step came to; the driver turns it into one fenced commit. */
export type StepOutcome =
  | {
      kind: 'done';
      output: unknown;
      /** The index of the step to go to next, when not the next one (a condition's on_false); steps.length to stop. */
      jump?: number;
      charge?: { ledgerId: string; amount: number; kind: string; repeatFree?: { key: string; since: number } };
      /** A lookup's fresh answer, for the shared result cache. */
      cache?: { kind: string; key: string; result: unknown };
      delivery?: { id: string; webhookId: string; messageId: string; eventType: string; payload: string };
    }
  /** A delay's first execution: wake at `wakeAt`, holding no worker meanwhile. */
  | { kind: 'wait'; wakeAt: number }
  /** Might work later (a provider down, a rate limit): tried again after a backoff, a few times. */
  | { kind: 'retry'; code: string; message: string }
  | { kind: 'fail'; code: string; message: string };

/** The data expressions read: the run's input and the finished steps' outputs. */
export interface RunData {
  input: unknown;
  steps: Record<string, { output: unknown }>;
}

function digest(...parts: string[]): string {
  return createHash('sha256').update(parts.join('\0')).digest('hex').slice(0, 40);
}

/** The message id a webhook step's delivery carries (Standard Webhooks `webhook-id`, and `Idempotency-Key`). */
export function stepMessageId(runId: string, stepId: string): string {
  return `wfs_${digest(runId, stepId)}`;
}

/** The ledger line of a lookup step: one per (run, step), whatever number of times the step executes. */
export function stepLedgerId(accountId: string, runId: string, stepId: string): string {
  return chargeLedgerId(accountId, `workflow_run:${runId}`, `step:${stepId}`);
}

function fail(e: unknown): StepOutcome {
  if (e instanceof AppError) return { kind: 'fail', code: e.code, message: e.message };
  throw e;
}

export async function executeStep(
  deps: StepDeps,
  ctx: { accountId: string; runId: string; workflowId: string; wakeAt: number | null; now: number; signal: AbortSignal; stepIds: readonly string[] },
  step: StepDefinition,
  data: RunData,
): Promise<StepOutcome> {
  const budget = deps.budget ?? DEFAULT_BUDGET;
  const expr = (field: string): unknown => evaluate(step.config[field], data, budget);
  try {
    if (Object.hasOwn(LOOKUP_STEPS, step.type)) return await lookupStep(deps, ctx, step, expr('input'));
    switch (step.type) {
      case 'condition': {
        const value = expr('expression');
        const result = Array.isArray(value) ? value.length > 0 : Boolean(value);
        if (result) return { kind: 'done', output: { result } };
        // On false: stop (the run completes, later steps skipped) or go forward to a named step.
        const onFalse = step.config.on_false ?? 'stop';
        return { kind: 'done', output: { result }, jump: onFalse === 'stop' ? ctx.stepIds.length : ctx.stepIds.indexOf(onFalse as string) };
      }
      case 'transform':
        return { kind: 'done', output: expr('expression') };
      case 'delay':
        // The wake time is written at the first execution and read back after: a retry or a crash
        // never restarts the timer.
        if (ctx.wakeAt === null) return { kind: 'wait', wakeAt: ctx.now + (step.config.seconds as number) * 1000 };
        return { kind: 'done', output: { waited_until: new Date(ctx.wakeAt).toISOString() } };
      case 'webhook':
        return await webhookStep(deps, ctx, step, Object.hasOwn(step.config, 'body') ? expr('body') : data.input);
      default:
        return { kind: 'fail', code: ERROR_CODES.stepTypeUnsupported, message: `step type ${step.type} cannot run` };
    }
  } catch (e) {
    return fail(e);
  }
}

/**
 * A lookup step, on the billing cache and result cache the jobs and single lookups use: a key the
 * account paid for within the repeat-free window is free (and read from the result cache when the
 * provider is remote), else it costs 1 credit on the step's own ledger line, which the commit
 * checks again and records in the billing cache.
 */
async function lookupStep(deps: StepDeps, ctx: { accountId: string; runId: string; now: number; signal: AbortSignal }, step: StepDefinition, value: unknown): Promise<StepOutcome> {
  const pipeline = PIPELINES[LOOKUP_STEPS[step.type] as keyof typeof PIPELINES] as Pipeline;
  if (typeof value !== 'string') return { kind: 'fail', code: ERROR_CODES.invalidWorkflow, message: `step ${step.id}: its input is ${value === null ? 'null' : typeof value}, not text` };
  const normalised = pipeline.normalise(value);
  if (!normalised.ok) return { kind: 'fail', code: normalised.code, message: `step ${step.id}: ${JSON.stringify(value.slice(0, 100))} is not a valid input (${normalised.code})` };
  const { key } = normalised;
  const kind = pipeline.lookupKind;
  const provider = deps.providers.get(kind);
  if (!provider) return { kind: 'retry', code: ERROR_CODES.providerUnavailable, message: `no ${kind} provider is configured` };
  const since = ctx.now - deps.repeatFreeDays * DAY_MS;
  const repeat = (await deps.store.billing.freshlyBilled(ctx.accountId, kind, [key], since)).has(key);
  // Checked before the provider is called: a run that cannot pay does not spend a lookup.
  if (!repeat && (await deps.store.billing.available(ctx.accountId)) < 1) return { kind: 'fail', code: ERROR_CODES.insufficientCredits, message: 'the account has no credits left' };
  const cached = provider.answersLocally ? undefined : (await deps.store.results.getMany(kind, [key], since)).get(key);
  if (cached !== undefined) return { kind: 'done', output: cached, ...(repeat ? {} : { charge: stepCharge(ctx, step, kind, key, since) }) };
  // One try here: the run's own retry waits out a failure durably (wake_at), holding no worker.
  const outcome = (await lookupBatch([key], { accountId: ctx.accountId, provider, limiters: deps.limiters, signal: ctx.signal, attempts: 1 })).get(key)!;
  if (!outcome.ok) return { kind: outcome.retryable ? 'retry' : 'fail', code: outcome.code, message: outcome.message };
  return {
    kind: 'done',
    output: outcome.result,
    ...(repeat ? {} : { charge: stepCharge(ctx, step, kind, key, since) }),
    ...(provider.answersLocally ? {} : { cache: { kind, key, result: outcome.result } }),
  };
}

function stepCharge(ctx: { accountId: string; runId: string }, step: StepDefinition, kind: string, key: string, since: number) {
  return { ledgerId: stepLedgerId(ctx.accountId, ctx.runId, step.id), amount: 1, kind, repeatFree: { key, since } };
}

async function webhookStep(deps: StepDeps, ctx: { accountId: string; runId: string; workflowId: string; now: number }, step: StepDefinition, body: unknown): Promise<StepOutcome> {
  const webhookId = step.config.webhook_id as string;
  const webhook = await deps.store.webhooks.get(webhookId);
  // The URL and signing secret stay on the webhook (sealed): the step names it, the sender resolves
  // them at send time, and neither ever enters the run's outputs or logs.
  if (!webhook || webhook.accountId !== ctx.accountId || !webhook.isActive || webhook.kind !== 'generic') {
    return { kind: 'fail', code: ERROR_CODES.workflowWebhookNotFound, message: `step ${step.id}: webhook ${webhookId} is not an active generic webhook of this account` };
  }
  const messageId = stepMessageId(ctx.runId, step.id);
  const payload = JSON.stringify({
    event: WORKFLOW_STEP_EVENT,
    data: { workflow_id: ctx.workflowId, run_id: ctx.runId, step_id: step.id, body },
    created_at: new Date(ctx.now).toISOString(),
  });
  return {
    kind: 'done',
    output: { webhook_id: webhookId, message_id: messageId },
    delivery: { id: `wfd_${digest(ctx.runId, step.id)}`, webhookId, messageId, eventType: WORKFLOW_STEP_EVENT, payload },
  };
}
