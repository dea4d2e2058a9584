/** One step of a workflow definition (docs/workflows.md); its own file so that the checks definition.ts calls can name it without a cycle. */
export interface StepDefinition {
  id: string;
  type: string;
  config: Record<string, unknown>;
}
