import type { ResultCachePort } from '../store.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';

/**
 * Answers shared across accounts. A hit spares a provider call; whether the row is charged is
 * billing's decision alone.
 */
export class PgResults implements ResultCachePort {
  constructor(private readonly db: PgDatabase) {}

  async getMany<R>(kind: string, keys: readonly string[], since: number): Promise<Map<string, R>> {
    const found = new Map<string, R>();
    if (keys.length === 0) return found;
    const { rows } = await this.db.query<{ key: string; result: string }>(
      'SELECT lookup_key AS key, result FROM result_cache WHERE kind = $1 AND looked_up_at > $2 AND lookup_key = ANY($3::text[])',
      [kind, since, keys],
    );
    for (const row of rows) found.set(row.key, JSON.parse(row.result) as R);
    return found;
  }

  async put(kind: string, key: string, result: unknown, now: number): Promise<void> {
    await putResults(this.db, [{ kind, key, result }], now);
  }
}

/**
 * Upserts answers in one statement, inside the caller's transaction. A (kind, key) given twice
 * (two lookups of one kind on the same value) keeps the last answer, as one put after the other would.
 */
export async function putResults(tx: PgQueryable, entries: readonly { kind: string; key: string; result: unknown }[], now: number): Promise<void> {
  if (entries.length === 0) return;
  const last = new Map<string, { kind: string; key: string; result: unknown }>();
  for (const e of entries) last.set(`${e.kind}\0${e.key}`, e);
  const rows = [...last.values()];
  await tx.query(
    `INSERT INTO result_cache (kind, lookup_key, result, looked_up_at)
     SELECT t.kind, t.key, t.result, $1 FROM unnest($2::text[], $3::text[], $4::text[]) AS t(kind, key, result)
     ON CONFLICT (kind, lookup_key) DO UPDATE SET result = EXCLUDED.result, looked_up_at = EXCLUDED.looked_up_at`,
    [now, rows.map((r) => r.kind), rows.map((r) => r.key), rows.map((r) => JSON.stringify(r.result))],
  );
}
