import { randomUUID } from 'node:crypto';
import { PIPELINES } from '../../pipelines/index.js';
import type { Pipeline } from '../../pipelines/pipeline.js';
import { DAY_MS, type Clock } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { Store } from '../storage/store.js';
import type { WorkflowRunRecord } from '../storage/workflow-records.js';
import { runNotFound } from '../storage/workflow-rows.js';
import { LOOKUP_STEPS, type StepDefinition } from './definition.js';
import { evaluate } from './expression.js';

export interface RerunDeps {
  readonly store: Store;
  readonly clock: Clock;
  readonly repeatFreeDays: number;
  readonly runsInFlight: number;
}

/** What running again from a step would cost, at most: a condition may skip some of the lookups. */
export interface RerunEstimate {
  /** Credits at most: one per lookup step from the chosen step on, less the known free repeats. */
  credits: number;
  lookupSteps: number;
  /** Lookup steps whose input is known now (it reads only the run's input and earlier outputs) and whose key the account paid for within the repeat-free window. */
  freeRepeats: number;
}

/**
 * Rerun from a chosen step (docs/workflows.md): a NEW run of the ended run's pinned version and
 * input, whose earlier steps' outputs are copied (neither executed nor charged again), starting at
 * `fromStep`; with `dryRun`, only the estimate. The estimate counts each lookup step from there
 * on as 1 credit unless its input can be read now, without the steps to be rerun, and names a key
 * the account paid for within the window.
 */
export async function rerunFromStep(
  deps: RerunDeps,
  accountId: string,
  runId: string,
  fromStep: string,
  dryRun: boolean,
): Promise<{ run: WorkflowRunRecord | null; estimate: RerunEstimate }> {
  const source = await deps.store.workflows.run(accountId, runId);
  const pinned = source && (await deps.store.workflows.pinnedSteps(accountId, runId));
  if (!source || !pinned) throw runNotFound(runId);
  const steps = JSON.parse(pinned) as StepDefinition[];
  const cursor = steps.findIndex((s) => s.id === fromStep);
  if (cursor < 0) throw new AppError(ERROR_CODES.invalidRequest, `run ${runId}'s version has no step ${fromStep}`, { statusCode: 422, details: { from_step: fromStep } });
  const all = JSON.parse(source.outputs) as Record<string, unknown>;
  const kept = Object.fromEntries(steps.slice(0, cursor).filter((s) => Object.hasOwn(all, s.id)).map((s) => [s.id, all[s.id]]));
  const estimate = await estimateCost(deps, accountId, steps.slice(cursor), { input: JSON.parse(source.input) as unknown, steps: Object.fromEntries(Object.entries(kept).map(([id, output]) => [id, { output }])) });
  if (dryRun) return { run: null, estimate };
  const run = await deps.store.workflows.rerun({
    sourceRunId: runId,
    id: `wfr_${randomUUID()}`,
    accountId,
    cursor,
    outputs: JSON.stringify(kept),
    stepsCompleted: Object.keys(kept).length,
    maxInFlight: deps.runsInFlight,
    now: deps.clock.now(),
  });
  return { run, estimate };
}

async function estimateCost(deps: RerunDeps, accountId: string, steps: readonly StepDefinition[], data: { input: unknown; steps: Record<string, { output: unknown }> }): Promise<RerunEstimate> {
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
  let lookupSteps = 0;
  let freeRepeats = 0;
  for (const step of steps) {
    if (!Object.hasOwn(LOOKUP_STEPS, step.type)) continue;
    lookupSteps += 1;
    const key = knownKey(step, data);
    const kind = (PIPELINES[LOOKUP_STEPS[step.type] as keyof typeof PIPELINES] as Pipeline).lookupKind;
    if (key !== undefined && (await deps.store.billing.freshlyBilled(accountId, kind, [key], since)).has(key)) freeRepeats += 1;
  }
  return { credits: lookupSteps - freeRepeats, lookupSteps, freeRepeats };
}

/** The step's normalised key when its input reads only what is known now; else undefined (counted as paid). */
function knownKey(step: StepDefinition, data: { input: unknown; steps: Record<string, { output: unknown }> }): string | undefined {
  let value: unknown;
  try {
    value = evaluate(step.config.input, data);
  } catch {
    return undefined;
  }
  if (typeof value !== 'string') return undefined;
  const normalised = (PIPELINES[LOOKUP_STEPS[step.type] as keyof typeof PIPELINES] as Pipeline).normalise(value);
  return normalised.ok ? normalised.key : undefined;
}

/** The estimate as the API shows it. */
export function estimateView(e: RerunEstimate) {
  return { credits: e.credits, lookup_steps: e.lookupSteps, free_repeats: e.freeRepeats };
}
