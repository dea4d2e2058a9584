import type { SealedWorkflowSecret, WorkflowSecretRecord, WorkflowSecretsPort } from '../workflow-secret-records.js';
import type { PgDatabase } from './pg-database.js';

/** Workflow secrets in the shared database; a put locks the row it replaces, so two puts each destroy the key they replaced. */
export class PgWorkflowSecrets implements WorkflowSecretsPort {
  constructor(private readonly db: PgDatabase) {}

  async put(input: { accountId: string; name: string; sealed: string; keyName: string; now: number }): Promise<{ created: boolean; replacedKey: string | undefined }> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ keyName: string }>('SELECT key_name AS "keyName" FROM workflow_secrets WHERE account_id = $1 AND name = $2 FOR UPDATE', [input.accountId, input.name]);
      await tx.query(
        `INSERT INTO workflow_secrets (account_id, name, value_sealed, key_name, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $5)
         ON CONFLICT (account_id, name) DO UPDATE SET value_sealed = EXCLUDED.value_sealed, key_name = EXCLUDED.key_name, updated_at = EXCLUDED.updated_at`,
        [input.accountId, input.name, input.sealed, input.keyName, input.now],
      );
      return { created: rows[0] === undefined, replacedKey: rows[0]?.keyName };
    });
  }

  async list(accountId: string): Promise<WorkflowSecretRecord[]> {
    const { rows } = await this.db.query<{ name: string; createdAt: string; updatedAt: string }>(
      'SELECT name, created_at AS "createdAt", updated_at AS "updatedAt" FROM workflow_secrets WHERE account_id = $1 ORDER BY name',
      [accountId],
    );
    return rows.map((r) => ({ name: r.name, createdAt: Number(r.createdAt), updatedAt: Number(r.updatedAt) }));
  }

  async sealed(accountId: string, name: string): Promise<SealedWorkflowSecret | undefined> {
    const { rows } = await this.db.query<SealedWorkflowSecret>('SELECT value_sealed AS sealed, key_name AS "keyName" FROM workflow_secrets WHERE account_id = $1 AND name = $2', [accountId, name]);
    return rows[0];
  }

  async remove(accountId: string, name: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ keyName: string }>('DELETE FROM workflow_secrets WHERE account_id = $1 AND name = $2 RETURNING key_name AS "keyName"', [accountId, name]);
    return rows[0]?.keyName;
  }
}
