import type { SealedWorkflowSecret, WorkflowSecretRecord, WorkflowSecretsPort } from '../workflow-secret-records.js';
import type { Db } from './open-database.js';

/** Workflow secrets on the data dir's file; a put reads the replaced key and writes in one IMMEDIATE transaction. */
export class SqliteWorkflowSecrets implements WorkflowSecretsPort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      key: db.prepare('SELECT key_name AS keyName FROM workflow_secrets WHERE account_id = ? AND name = ?'),
      put: db.prepare(
        `INSERT INTO workflow_secrets (account_id, name, value_sealed, key_name, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?)
         ON CONFLICT (account_id, name) DO UPDATE SET value_sealed = excluded.value_sealed, key_name = excluded.key_name, updated_at = excluded.updated_at`,
      ),
      list: db.prepare('SELECT name, created_at AS createdAt, updated_at AS updatedAt FROM workflow_secrets WHERE account_id = ? ORDER BY name'),
      sealed: db.prepare('SELECT value_sealed AS sealed, key_name AS keyName FROM workflow_secrets WHERE account_id = ? AND name = ?'),
      remove: db.prepare('DELETE FROM workflow_secrets WHERE account_id = ? AND name = ? RETURNING key_name AS keyName'),
    };
  }

  async put(input: { accountId: string; name: string; sealed: string; keyName: string; now: number }): Promise<{ created: boolean; replacedKey: string | undefined }> {
    return this.db
      .transaction(() => {
        const old = this.s.key.get(input.accountId, input.name) as { keyName: string } | undefined;
        this.s.put.run(input.accountId, input.name, input.sealed, input.keyName, input.now, input.now);
        return { created: old === undefined, replacedKey: old?.keyName };
      })
      .immediate();
  }

  async list(accountId: string): Promise<WorkflowSecretRecord[]> {
    return this.s.list.all(accountId) as WorkflowSecretRecord[];
  }

  async sealed(accountId: string, name: string): Promise<SealedWorkflowSecret | undefined> {
    return this.s.sealed.get(accountId, name) as SealedWorkflowSecret | undefined;
  }

  async remove(accountId: string, name: string): Promise<string | undefined> {
    return (this.s.remove.get(accountId, name) as { keyName: string } | undefined)?.keyName;
  }
}
