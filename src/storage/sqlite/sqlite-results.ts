import type { ResultCachePort } from '../store.js';
import type { Db } from './open-database.js';

/**
 * Answers shared across accounts. A hit spares a provider call; whether the row is charged is
 * billing's decision alone (the spec: `credits` is what was billed, `cached` a performance signal).
 */
export class SqliteResults implements ResultCachePort {
  private readonly select;
  private readonly upsert;

  constructor(db: Db) {
    this.select = db.prepare(
      'SELECT lookup_key AS key, result FROM result_cache WHERE kind = ? AND looked_up_at > ? AND lookup_key IN (SELECT value FROM json_each(?))',
    );
    this.upsert = db.prepare(
      'INSERT INTO result_cache (kind, lookup_key, result, looked_up_at) VALUES (?, ?, ?, ?) ON CONFLICT (kind, lookup_key) DO UPDATE SET result = excluded.result, looked_up_at = excluded.looked_up_at',
    );
  }

  /** Fresh answers (looked up after `since`) for the keys, in one query. */
  async getMany<R>(kind: string, keys: readonly string[], since: number): Promise<Map<string, R>> {
    const found = new Map<string, R>();
    if (keys.length === 0) return found;
    for (const row of this.select.all(kind, since, JSON.stringify(keys)) as { key: string; result: string }[]) {
      found.set(row.key, JSON.parse(row.result) as R);
    }
    return found;
  }

  async put(kind: string, key: string, result: unknown, now: number): Promise<void> {
    this.putSync(kind, key, result, now);
  }

  /** For the store's own operations, inside their transaction. */
  putSync(kind: string, key: string, result: unknown, now: number): void {
    this.upsert.run(kind, key, JSON.stringify(result), now);
  }
}
