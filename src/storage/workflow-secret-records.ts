/** A workflow secret as listed: never its value (docs/workflows.md, "Secrets"). */
export interface WorkflowSecretRecord {
  name: string;
  createdAt: number;
  updatedAt: number;
}

/** A stored secret's sealed value and the data key it is sealed under. */
export interface SealedWorkflowSecret {
  sealed: string;
  keyName: string;
}

/**
 * Workflow secrets of all accounts, keyed by (account, name). The port stores sealed values only;
 * sealing, and destroying the data keys it hands back, is the caller's (src/workflows/workflow-secrets.ts).
 */
export interface WorkflowSecretsPort {
  /**
   * Creates or replaces the secret. Returns whether it was new and the data key of the value it
   * replaced (to destroy), atomically with the write.
   */
  put(input: { accountId: string; name: string; sealed: string; keyName: string; now: number }): Promise<{ created: boolean; replacedKey: string | undefined }>;
  /** Name order. */
  list(accountId: string): Promise<WorkflowSecretRecord[]>;
  sealed(accountId: string, name: string): Promise<SealedWorkflowSecret | undefined>;
  /** The data key of the removed value (to destroy), or undefined when there was no such secret. */
  remove(accountId: string, name: string): Promise<string | undefined>;
}
