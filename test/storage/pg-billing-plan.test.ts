import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BILLED_HASHES } from '../../src/storage/postgres/pg-core-charges.js';
import type { PgDatabase } from '../../src/storage/postgres/pg-database.js';
import { poolScope, postgresServerUrl } from '../support/postgres-database.js';

/**
 * The billing check must be a probe of billing_cache's primary key, never a read of the whole table,
 * at any size and whether or not the table's statistics are fresh: the join it replaced was planned
 * as a sequential scan until the table held about 150,000 keys. The plans are read with EXPLAIN for
 * a 1,000-key batch, as a checkpoint asks it, at 0, 10,000 and 300,000 keys (1,000,000 in the bench,
 * too slow to fill here); at each size before ANALYZE (statistics of the empty table) and after.
 */
const BATCH = 1_000;
const ACCOUNT = 1;
const SINCE = 0;

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

function nodes(plan: PlanNode): PlanNode[] {
  return [plan, ...(plan.Plans ?? []).flatMap(nodes)];
}

/**
 * The probe of sluice_checkpoint (migration 020), as it is written there: the kind's hashes picked
 * out of the batch's (kind, hash) pairs. Kept in step with the function by hand.
 */
const CHECKPOINT_PROBE = `SELECT array_agg(b.key_hash) FROM billing_cache b
  WHERE b.account_seq = $1 AND b.kind = $2 AND b.charged_at > $4
    AND b.key_hash = ANY (ARRAY(SELECT t.h FROM unnest($5::int[], $3::bytea[]) AS t(k, h) WHERE t.k = 0))`;

/**
 * The plan for these values, or the generic plan (one for any values), which PL/pgSQL may cache
 * and use for every later call of the function.
 */
async function planOf(db: PgDatabase, hashes: Buffer[], sql: string, generic: boolean): Promise<PlanNode[]> {
  const params = sql === BILLED_HASHES ? [ACCOUNT, 'gender', hashes, SINCE] : [ACCOUNT, 'gender', hashes, SINCE, hashes.map(() => 0)];
  return db.transaction(async (tx) => {
    await tx.query(`SET LOCAL plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`);
    const { rows } = await tx.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
    return nodes(rows[0]!['QUERY PLAN'][0]!.Plan);
  });
}

/** Keys 1..n of the account, named as 16-byte hashes like the real ones (md5 of the number). */
async function fill(db: PgDatabase, from: number, to: number): Promise<void> {
  await db.query(
    `INSERT INTO billing_cache (account_seq, kind, key_hash, charged_at, ledger_seq)
     SELECT $1, 'gender', decode(md5(i::text), 'hex'), 1, 1 FROM generate_series($2::int, $3::int) AS i`,
    [ACCOUNT, from, to],
  );
}

/** A batch of which half is in the table (keys from 1 up) and half is not. */
function batch(present: number): Buffer[] {
  const md5 = (i: number) => Buffer.from(md5Hex(String(i)), 'hex');
  const inTable = Math.min(present, BATCH / 2);
  return [...Array.from({ length: inTable }, (_, i) => md5(i + 1)), ...Array.from({ length: BATCH - inTable }, (_, i) => md5(10_000_000 + i))];
}

function md5Hex(text: string): string {
  return createHash('md5').update(text).digest('hex');
}

describe.skipIf(!postgresServerUrl())('the PostgreSQL billing check is an index probe whatever the table size', () => {
  const scope = poolScope();
  let db: PgDatabase;
  beforeAll(async () => {
    db = (await scope.open('pg_billing_plan', 1)).pools[0]!;
  });
  afterAll(() => scope.closeAll());

  async function expectProbe(present: number): Promise<void> {
    for (const sql of [BILLED_HASHES, CHECKPOINT_PROBE]) {
      for (const generic of [false, true]) expectIndexOnly(await planOf(db, batch(present), sql, generic));
    }
    // And the answer is right: exactly the batch's keys that the table holds.
    const { rows } = await db.query(BILLED_HASHES, [ACCOUNT, 'gender', batch(present), SINCE]);
    expect(rows.length).toBe(Math.min(present, BATCH / 2));
  }

  function expectIndexOnly(plan: PlanNode[]): void {
    const onCache = plan.filter((n) => n['Relation Name'] === 'billing_cache');
    expect(onCache.length).toBeGreaterThan(0);
    for (const n of onCache) expect(n['Node Type']).not.toBe('Seq Scan');
    // An index scan, or a bitmap heap scan over a bitmap index scan (which names no relation).
    expect(plan.some((n) => /Index/.test(n['Node Type']) && n['Index Name'] === 'billing_cache_pkey')).toBe(true);
  }

  it('at 0 keys', async () => {
    await expectProbe(0);
  });

  it('at 10,000 keys, before and after ANALYZE', async () => {
    await fill(db, 1, 10_000);
    await expectProbe(10_000);
    await db.query('ANALYZE billing_cache');
    await expectProbe(10_000);
  });

  it('at 300,000 keys, before and after ANALYZE', async () => {
    await fill(db, 10_001, 300_000);
    await expectProbe(300_000);
    await db.query('ANALYZE billing_cache');
    await expectProbe(300_000);
  }, 120_000);
});
