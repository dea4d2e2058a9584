/**
 * Small values that every process changes under one lock: the store's shared records (LimitsPort
 * in src/storage/store.ts extends this), or one process's own when there is no store (a lookup
 * provider used on its own, unit tests).
 */
export interface SharedRecords {
  /** The shared record `name`, or undefined. A read. */
  readShared(name: string): Promise<string | undefined>;
  /**
   * Runs `change` on the record's current value (undefined when there is none) while holding a
   * lock on it that every other `updateShared` of `name` waits for; stores the value it returns
   * (undefined deletes the record) and resolves to its `result`. `change` must be synchronous and
   * pure: it may run more than once when the database asks for the transaction to be tried again.
   */
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
