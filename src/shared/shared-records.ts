/**
 * Small values that every process changes under one lock: the store's shared records (LimitsPort
 * in src/storage/store.ts, which says what the lock promises), or one process's own when there is
 * no store (a lookup provider used on its own, unit tests).
 */
export interface SharedRecords {
  readShared(name: string): Promise<string | undefined>;
  updateShared<T>(name: string, change: (value: string | undefined) => { value: string | undefined; result: T }): Promise<T>;
}

/** The shared records of one process: correct for it alone, shared with nothing. */
export class ProcessRecords implements SharedRecords {
  private readonly values = new Map<string, string>();

  async readShared(name: string): Promise<string | undefined> {
    return this.values.get(name);
  }

  async updateShared<T>(name: string, change: (value: string | undefined) => { value: string | undefined; result: T }): Promise<T> {
    const { value, result } = change(this.values.get(name));
    if (value === undefined) this.values.delete(name);
    else this.values.set(name, value);
    return result;
  }
}
