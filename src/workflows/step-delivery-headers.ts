import type { Store } from '../storage/store.js';
import type { StepDefinition } from './definition.js';
import { WORKFLOW_STEP_EVENT } from './step-executor.js';
import { checkStepHeaders, SECRET_REFERENCE } from './step-headers.js';
import type { WorkflowSecrets } from '../webhooks/workflow-secrets.js';

/**
 * The headers of the webhook step a `workflow.step` delivery comes from, secrets filled in, read
 * from the version the run pinned. A secret deleted since the save makes the header go out empty
 * rather than with its reference: the receiver refuses it, and nothing is guessed.
 */
export async function stepDeliveryHeaders(store: Store, secrets: WorkflowSecrets, accountId: string, eventType: string, payload: unknown): Promise<Record<string, string>> {
  if (eventType !== WORKFLOW_STEP_EVENT) return {};
  const data = (payload as { data?: { run_id?: unknown; step_id?: unknown } } | null)?.data;
  if (typeof data?.run_id !== 'string' || typeof data.step_id !== 'string') return {};
  const pinned = await store.workflows.pinnedSteps(accountId, data.run_id);
  const step = pinned === undefined ? undefined : (JSON.parse(pinned) as StepDefinition[]).find((s) => s.id === data.step_id);
  const headers = step?.config.headers as Record<string, string> | undefined;
  if (!headers) return {};
  const out: Record<string, string> = {};
  const values = new Map<string, string>();
  for (const name of checkStepHeaders(step!)) if (!values.has(name)) values.set(name, (await secrets.resolve(accountId, name)) ?? '');
  for (const [name, value] of Object.entries(headers)) out[name.toLowerCase()] = value.replace(SECRET_REFERENCE, (_, secret: string) => values.get(secret) ?? '');
  return out;
}
