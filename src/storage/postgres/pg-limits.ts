import type { LimitsPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

/**
 * One statement, so one round trip and atomic on its own. The candidates stop at the live slots
 * plus `want`, among which `want` are free if so many are: a take costs what is held, not `size`
 * (a series of 10,000 sorted for every take cost 2.6 ms). Two takers that pick the same free slot
 * both try to insert it: the second waits for the first to commit, then its ON CONFLICT locks the
 * row as committed (READ COMMITTED looks past its snapshot here) and re-checks the expiry, finds
 * the row live, and skips it. So a slot is never held twice, and a loser of that race gets fewer
 * slots than it could have (it does not go on to the next free one): a caller that got fewer than
 * it wanted asks again later, as it would if the slots were held.
 */
const TAKE = `
  INSERT INTO limit_slots (name, slot, holder, expires_at)
  SELECT $1, s, $4, $6
    FROM generate_series(0, LEAST($2::int, (SELECT count(*)::int FROM limit_slots WHERE name = $1 AND expires_at >= $5) + $3::int) - 1) AS s
  WHERE NOT EXISTS (SELECT 1 FROM limit_slots l WHERE l.name = $1 AND l.slot = s AND l.expires_at >= $5)
  ORDER BY s LIMIT $3
  ON CONFLICT (name, slot) DO UPDATE SET holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
    WHERE limit_slots.expires_at < $5
  RETURNING slot`;

/**
 * Locks the record's row, inserting a NULL one ("no record") when there is none, so that even the
 * first change of a name waits for another's: a plain SELECT ... FOR UPDATE locks nothing when the
 * row does not exist yet, and two first changes would both start from undefined. The DO UPDATE
 * changes nothing; it is there to lock the committed row and return its latest value.
 */
const LOCK = 'INSERT INTO shared_records (name, value) VALUES ($1, NULL) ON CONFLICT (name) DO UPDATE SET name = EXCLUDED.name RETURNING value';

/** Slots and shared records in the shared database. */
export class PgLimits implements LimitsPort {
  constructor(private readonly db: PgDatabase) {}

  async takeSlots(input: { name: string; size: number; want: number; holder: string; now: number; expiresAt: number }): Promise<number[]> {
    if (input.want <= 0 || input.size <= 0) return [];
    const { rows } = await this.db.query<{ slot: number }>(TAKE, [input.name, input.size, input.want, input.holder, input.now, input.expiresAt]);
    return rows.map((r) => r.slot).sort((x, y) => x - y);
  }

  async releaseSlots(name: string, holder: string, slots: readonly number[]): Promise<void> {
    if (slots.length === 0) return;
    await this.db.query('DELETE FROM limit_slots WHERE name = $1 AND holder = $2 AND slot = ANY($3::int[])', [name, holder, slots]);
  }

  async renewSlots(holder: string, expiresAt: number): Promise<number> {
    return (await this.db.query('UPDATE limit_slots SET expires_at = $1 WHERE holder = $2', [expiresAt, holder])).rowCount;
  }

  async heldSlots(name: string, now: number): Promise<number> {
    const { rows } = await this.db.query<{ n: number }>('SELECT count(*) AS n FROM limit_slots WHERE name = $1 AND expires_at >= $2', [name, now]);
    return rows[0]!.n;
  }

  async readShared(name: string): Promise<string | undefined> {
    const { rows } = await this.db.query<{ value: string | null }>('SELECT value FROM shared_records WHERE name = $1', [name]);
    return rows[0]?.value ?? undefined;
  }

  /** Serialised on the record's row (LOCK); `change` runs again if the transaction is retried. */
  async updateShared<T>(name: string, change: (value: string | undefined) => { value: string | undefined; result: T }): Promise<T> {
    return this.db.transaction(async (tx) => {
      const { rows } = await tx.query<{ value: string | null }>(LOCK, [name]);
      const next = change(rows[0]!.value ?? undefined);
      if (next.value === undefined) await tx.query('DELETE FROM shared_records WHERE name = $1', [name]);
      else await tx.query('UPDATE shared_records SET value = $2 WHERE name = $1', [name, next.value]);
      return next.result;
    });
  }
}
