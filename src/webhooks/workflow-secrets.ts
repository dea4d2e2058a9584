import { randomUUID } from 'node:crypto';
import type { ShreddingSealer } from '../auth/data-keys.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { WorkflowSecretRecord, WorkflowSecretsPort } from '../storage/workflow-secret-records.js';

/** A secret's name: what `{{secrets.NAME}}` references. */
export const SECRET_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/;
export const MAX_SECRET_CHARS = 4096;

/** The data key of one stored value: a replace or a delete destroys it (src/auth/data-keys.ts). */
function secretKeyName(): string {
  return `wfsecret-${randomUUID()}`;
}

export function checkSecretName(name: string): string {
  if (!SECRET_NAME.test(name)) throw new AppError(ERROR_CODES.invalidRequest, 'a secret name is a letter, then up to 63 letters, digits or _', { statusCode: 422 });
  return name;
}

/**
 * An account's workflow secrets (docs/workflows.md, "Secrets"). Each value is sealed under a data
 * key of its own, never under the seal key: replacing or deleting a secret destroys that key, so
 * the bytes the database keeps after the row is gone (free pages, WAL, dead tuples, a backup)
 * open to nothing. A value leaves this class only through `resolve`, which the webhook sender
 * calls at send time.
 */
export class WorkflowSecrets {
  constructor(
    private readonly port: WorkflowSecretsPort,
    private readonly sealer: ShreddingSealer,
  ) {}

  async put(accountId: string, name: string, value: string, now: number): Promise<{ secret: WorkflowSecretRecord; created: boolean }> {
    checkSecretName(name);
    if (value.length === 0 || value.length > MAX_SECRET_CHARS) throw new AppError(ERROR_CODES.invalidRequest, `a secret's value is 1 to ${MAX_SECRET_CHARS} characters`, { statusCode: 422 });
    const keyName = secretKeyName();
    const sealed = await this.sealer.seal(value, keyName);
    let put;
    try {
      put = await this.port.put({ accountId, name, sealed, keyName, now });
    } catch (e) {
      // A refused write leaves no data key behind.
      await this.sealer.destroy(keyName);
      throw e;
    }
    if (put.replacedKey !== undefined) await this.sealer.destroy(put.replacedKey);
    const secret = (await this.port.list(accountId)).find((s) => s.name === name) ?? { name, createdAt: now, updatedAt: now };
    return { secret, created: put.created };
  }

  list(accountId: string): Promise<WorkflowSecretRecord[]> {
    return this.port.list(accountId);
  }

  /** False when there was no such secret. */
  async delete(accountId: string, name: string): Promise<boolean> {
    const keyName = await this.port.remove(accountId, name);
    if (keyName === undefined) return false;
    await this.sealer.destroy(keyName);
    return true;
  }

  /** The names the account has, for checking references at save. */
  async names(accountId: string): Promise<Set<string>> {
    return new Set((await this.port.list(accountId)).map((s) => s.name));
  }

  /** The value, or undefined when there is no such secret (or it was erased meanwhile). */
  async resolve(accountId: string, name: string): Promise<string | undefined> {
    const row = await this.port.sealed(accountId, name);
    return row === undefined ? undefined : this.sealer.unseal(row.sealed);
  }
}

/** Wire form of a secret: its name and times, never its value. */
export function secretView(secret: WorkflowSecretRecord): { name: string; created_at: string; updated_at: string } {
  return { name: secret.name, created_at: new Date(secret.createdAt).toISOString(), updated_at: new Date(secret.updatedAt).toISOString() };
}
