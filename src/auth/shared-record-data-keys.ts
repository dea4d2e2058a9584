import type { SharedRecords } from '../shared/shared-records.js';
import { endOf, newDataKey, unwrapDataKey, wrapDataKey, type DataKeyRing } from './data-keys.js';

/** The record that lists the ring's keys with an end time, so that a sweep can find them. */
const INDEX = 'data-keys';
const PREFIX = 'data-key:';

/**
 * Data keys as the store's shared records (the PostgreSQL store's ring: machines that share a
 * database share nothing else). A destroyed key's row is deleted: no dump or logical copy taken
 * after that holds it. Dead tuples and the server's WAL are PostgreSQL's own files; see
 * docs/security.md for what that asks of the operator.
 */
export class SharedRecordDataKeys implements DataKeyRing {
  constructor(
    private readonly records: SharedRecords,
    private readonly sealKey: Buffer,
  ) {}

  async obtain(name: string): Promise<Buffer> {
    if (endOf(name) !== undefined) {
      await this.records.updateShared(INDEX, (value) => {
        const names: string[] = value ? (JSON.parse(value) as string[]) : [];
        return { value: JSON.stringify(names.includes(name) ? names : [...names, name]), result: undefined };
      });
    }
    const fresh = wrapDataKey(newDataKey(), this.sealKey);
    const wrapped = await this.records.updateShared(PREFIX + name, (value) => ({ value: value ?? fresh, result: value ?? fresh }));
    return unwrapDataKey(wrapped, this.sealKey);
  }

  async read(name: string): Promise<Buffer | undefined> {
    const wrapped = await this.records.readShared(PREFIX + name);
    return wrapped === undefined ? undefined : unwrapDataKey(wrapped, this.sealKey);
  }

  async destroy(name: string): Promise<void> {
    await this.records.updateShared(PREFIX + name, () => ({ value: undefined, result: undefined }));
    if (endOf(name) === undefined) return;
    await this.records.updateShared(INDEX, (value) => {
      const names = (value ? (JSON.parse(value) as string[]) : []).filter((n) => n !== name);
      return { value: names.length > 0 ? JSON.stringify(names) : undefined, result: undefined };
    });
  }

  async expiring(): Promise<string[]> {
    const value = await this.records.readShared(INDEX);
    return value ? (JSON.parse(value) as string[]) : [];
  }
}
