import type { LimitsPort } from '../store.js';
import type { Db } from './open-database.js';

/**
 * Slots and shared records on the data dir's one file. Each operation is one statement or one
 * IMMEDIATE transaction, so SQLite's single writer serialises it against every other process.
 */
export class SqliteLimits implements LimitsPort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      // One statement, so one write transaction: no other process writes between the read of the
      // free slots and their insert. The conflict clause re-checks the expiry all the same, so a
      // live slot is never overwritten whatever the isolation. The slot numbers come from a
      // recursive CTE: better-sqlite3 does not ship generate_series. They stop at the live slots
      // plus `want`, among which `want` are free if so many are: a take costs what is held, not `size`.
      take: db.prepare(`
        WITH RECURSIVE bound (n) AS (
          SELECT min(@size, (SELECT count(*) FROM limit_slots WHERE name = @name AND expires_at >= @now) + @want)
        ),
        numbers (slot) AS (
          SELECT 0 WHERE (SELECT n FROM bound) > 0
          UNION ALL SELECT slot + 1 FROM numbers WHERE slot + 1 < (SELECT n FROM bound)
        )
        INSERT INTO limit_slots (name, slot, holder, expires_at)
        SELECT @name, slot, @holder, @expiresAt FROM numbers
        WHERE NOT EXISTS (SELECT 1 FROM limit_slots l WHERE l.name = @name AND l.slot = numbers.slot AND l.expires_at >= @now)
        ORDER BY slot LIMIT @want
        ON CONFLICT (name, slot) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at
          WHERE limit_slots.expires_at < @now
        RETURNING slot`),
      release: db.prepare('DELETE FROM limit_slots WHERE name = ? AND holder = ? AND slot IN (SELECT value FROM json_each(?))'),
      renew: db.prepare('UPDATE limit_slots SET expires_at = ? WHERE holder = ?'),
      held: db.prepare('SELECT count(*) AS n FROM limit_slots WHERE name = ? AND expires_at >= ?'),
      read: db.prepare('SELECT value FROM shared_records WHERE name = ?'),
      write: db.prepare('INSERT INTO shared_records (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value'),
      remove: db.prepare('DELETE FROM shared_records WHERE name = ?'),
    };
  }

  async takeSlots(input: { name: string; size: number; want: number; holder: string; now: number; expiresAt: number }): Promise<number[]> {
    // SQLite reads a negative LIMIT as "no limit": a want of -1 would take every free slot.
    if (input.want <= 0 || input.size <= 0) return [];
    const rows = this.s.take.all(input) as { slot: number }[];
    return rows.map((r) => r.slot).sort((x, y) => x - y);
  }

  async releaseSlots(name: string, holder: string, slots: readonly number[]): Promise<void> {
    if (slots.length === 0) return;
    this.s.release.run(name, holder, JSON.stringify(slots));
  }

  async renewSlots(holder: string, expiresAt: number): Promise<number> {
    return this.s.renew.run(expiresAt, holder).changes;
  }

  async heldSlots(name: string, now: number): Promise<number> {
    return (this.s.held.get(name, now) as { n: number }).n;
  }

  async readShared(name: string): Promise<string | undefined> {
    return (this.s.read.get(name) as { value: string } | undefined)?.value;
  }

  /** IMMEDIATE: two processes that both read the value before either writes would lose one change. */
  async updateShared<T>(name: string, change: (value: string | undefined) => { value: string | undefined; result: T }): Promise<T> {
    return this.db
      .transaction((): T => {
        const next = change((this.s.read.get(name) as { value: string } | undefined)?.value);
        if (next.value === undefined) this.s.remove.run(name);
        else this.s.write.run(name, next.value);
        return next.result;
      })
      .immediate();
  }
}
