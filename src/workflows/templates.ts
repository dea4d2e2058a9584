import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { WorkflowBody } from './workflow-service.js';

/** A workflow to clone: a definition checked like any other when it is cloned. */
export interface WorkflowTemplate {
  id: string;
  name: string;
  description: string;
  steps: readonly { id: string; type: string; config: Record<string, unknown> }[];
}

/**
 * Built-in templates (docs/workflows.md). Plain data: cloning one goes through the same checks as
 * a definition a client sends, so a template can never hold what a save would refuse.
 */
export const WORKFLOW_TEMPLATES: readonly WorkflowTemplate[] = [
  {
    id: 'email_gender_segment',
    name: 'Segment a sign-up by gender',
    description: 'Looks up the gender of input.email and shapes a record; stops when the gender is unknown.',
    steps: [
      { id: 'lookup', type: 'email_lookup', config: { input: { var: 'input.email' } } },
      { id: 'known', type: 'condition', config: { expression: { '!=': [{ var: 'steps.lookup.output.gender' }, 'unknown'] } } },
      { id: 'record', type: 'transform', config: { expression: { object: { email: { var: 'input.email' }, gender: { var: 'steps.lookup.output.gender' }, probability: { var: 'steps.lookup.output.probability' } } } } },
    ],
  },
  {
    id: 'phone_breach_check',
    name: 'Check a phone number for breaches',
    description: 'Looks up input.phone in the breach index and says whether it was found.',
    steps: [
      { id: 'lookup', type: 'phone_lookup', config: { input: { var: 'input.phone' } } },
      { id: 'verdict', type: 'transform', config: { expression: { object: { phone: { var: 'input.phone' }, breached: { var: ['steps.lookup.output.found', false] } } } } },
    ],
  },
  {
    id: 'company_enrich_later',
    name: 'Enrich a company after a day',
    description: 'Waits a day after the trigger, then looks up input.company.',
    steps: [
      { id: 'wait', type: 'delay', config: { seconds: 86_400 } },
      { id: 'lookup', type: 'company_lookup', config: { input: { var: 'input.company' } } },
    ],
  },
];

export function templateView(t: WorkflowTemplate) {
  return { id: t.id, name: t.name, description: t.description, steps: t.steps };
}

/** The body that creates a workflow from template `id`; `name` and `status` may replace the template's. */
export function templateBody(id: string, over: { name?: string | undefined; status?: string | undefined }): WorkflowBody {
  const t = WORKFLOW_TEMPLATES.find((x) => x.id === id);
  if (!t) throw new AppError(ERROR_CODES.notFound, `no workflow template ${id}`, { statusCode: 404 });
  return { name: over.name ?? t.name, description: t.description, status: over.status ?? 'draft', trigger: { type: 'manual' }, steps: structuredClone(t.steps) };
}
