import { randomUUID } from 'node:crypto';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { csvCells, csvRecords } from '../../src/jobs/csv-writer.js';
import { migrationFiles } from '../../src/storage/migration-files.js';
import { BillingKeys } from '../../src/storage/billing-key.js';
import { migrate, registerBillingHash } from '../../src/storage/sqlite/open-database.js';
import { migratePostgres, PgDatabase } from '../../src/storage/postgres/pg-database.js';
import { bearer, closeHarnesses, json, newAccount as newApiAccount, openApiHarness } from '../support/api-harness.js';
import { freshDatabase, postgresServerUrl } from '../support/postgres-database.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { newAccount, NOW, openTestStore, type TestStore } from '../support/test-store.js';
import { newMonitor } from './monitor-fixtures.js';
import { driveRuns } from './run-fixtures.js';

/** Issue 33: a monitor's targets, and so its results and their download, keep the list's order, not the address order. */
const LIST = ['zed@example.com', 'amy@example.com', 'mia@example.com', 'bob@example.com', 'kim@example.com'];

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

describe.each(TEST_STORES)('Store contract on %s: targets keep their order', (kind) => {
  let opened: TestStore;
  afterEach(() => opened.close());

  it('a list keeps its arrival order across batches; a monitor takes it, and targets added later go after', async () => {
    opened = await openTestStore(kind);
    const { store } = opened;
    const account = (await newAccount(store)).id;
    const list = await store.monitors.createList({ id: 'l1', accountId: account, name: 'l', type: 'email', sourceKey: null, now: NOW });
    // Two batches, the second repeating a target of the first: the repeat keeps its first place.
    expect(await store.monitors.addListTargets(list.id, LIST.slice(0, 3))).toBe(3);
    expect(await store.monitors.addListTargets(list.id, [...LIST.slice(3), 'amy@example.com'])).toBe(2);
    await store.monitors.finishList(list.id, { invalidCount: 0, duplicateCount: 1, invalidByCode: {} });

    await store.monitors.create(newMonitor(account, 'm1'), { listId: list.id, targets: ['ann@example.com', 'zed@example.com'] });
    await store.monitors.addTargets(account, 'm1', ['cat@example.com', 'abe@example.com'], NOW + 1);
    const expected = [...LIST, 'ann@example.com', 'cat@example.com', 'abe@example.com'];
    const listed = await store.monitors.targets(account, 'm1', { limit: 100, offset: 0 });
    expect(listed.targets.map((t) => t.target)).toEqual(expected);

    // A run reads them in pages by (position, target); a target removed between pages skips nothing else.
    const first = await store.monitorRuns.targetPage('m1', null, 3);
    expect(first.map((t) => t.target)).toEqual(expected.slice(0, 3));
    await store.monitors.removeTargets(account, 'm1', [first[2]!.target, 'bob@example.com']);
    const rest = await store.monitorRuns.targetPage('m1', first[2]!, 100);
    expect(rest.map((t) => t.target)).toEqual(expected.slice(3).filter((t) => t !== 'bob@example.com'));

    // A second monitor seeded from the same list later, and a list added to a monitor that has targets.
    await store.monitors.create(newMonitor(account, 'm2'), { targets: ['first@example.com'] });
    await store.monitors.addListTargetsToMonitor(account, 'm2', list.id, NOW + 2);
    const m2 = await store.monitorRuns.targetPage('m2', null, 100);
    expect(m2.map((t) => t.target)).toEqual(['first@example.com', ...LIST]);
    expect(new Set(m2.map((t) => t.position)).size).toBe(m2.length);
  });
});

describe.each(TEST_STORES)('monitor results on %s', (kind) => {
  it("come in the list's order, in the JSON results and in the CSV download", async () => {
    const { env, drop } = await storeEnv(kind);
    cleanups.push(drop);
    const h = await openApiHarness(env);
    const caller = await newApiAccount(h, { credits: 1_000 });
    const call = (method: 'GET' | 'POST', url: string, payload?: object) => h.app.inject({ method, url, headers: bearer(caller.key), ...(payload ? { payload } : {}) });
    const list = await call('POST', '/api/lists', { name: 'staff', type: 'email', targets: LIST });
    expect(list.statusCode, list.body).toBe(201);
    const monitor = await call('POST', '/api/monitors', { name: 'staff', type: 'email', frequency: 'weekly', list_id: json(list).id, start_at: new Date(Date.now() + 86_400_000).toISOString() });
    expect(monitor.statusCode, monitor.body).toBe(201);
    const id = json(monitor).id as string;
    const runId = randomUUID();
    await h.engine.deps.store.monitors.queueManualRun(caller.id, id, runId, Date.now());
    await driveRuns(h.engine, caller.id, [{ monitorId: id, runId }]);

    const results = await call('GET', `/api/monitors/${id}/runs/${runId}/results`);
    expect(results.statusCode, results.body).toBe(200);
    expect(json(results).map((r: { target: string }) => r.target)).toEqual(LIST);
    const csv = await call('GET', `/api/monitors/${id}/runs/${runId}/results/download`);
    expect(csv.statusCode).toBe(200);
    expect(csvRecords(csv.body).map(csvCells).slice(1).map((r) => r[0])).toEqual(LIST);
  });
});

/** Data dirs made before migration 041 / 034: their targets get a deterministic order. */
describe('existing targets on upgrade', () => {
  const old = ['c@x.com', 'a@x.com', 'b@x.com'];

  it('on SQLite: a list by address, a monitor by when each was added, then by address', () => {
    const db = new Database(':memory:');
    registerBillingHash(db, new BillingKeys(Buffer.alloc(32, 7)));
    const files = migrationFiles(new URL('../../src/storage/sqlite/migrations/', import.meta.url));
    migrate(db, files.filter((f) => f.version < 41));
    db.pragma('foreign_keys = OFF');
    for (const t of old) db.prepare('INSERT INTO list_targets (list_id, target) VALUES (?, ?)').run('l1', t);
    old.forEach((t, i) => db.prepare('INSERT INTO monitor_targets (monitor_id, target, added_at) VALUES (?, ?, ?)').run('m1', t, i === 0 ? 1 : 2));
    migrate(db, files);
    expect(db.prepare("SELECT target, position FROM list_targets WHERE list_id = 'l1' ORDER BY position").all()).toEqual([
      { target: 'a@x.com', position: 1 }, { target: 'b@x.com', position: 2 }, { target: 'c@x.com', position: 3 },
    ]);
    expect(db.prepare("SELECT target, position FROM monitor_targets WHERE monitor_id = 'm1' ORDER BY position").all()).toEqual([
      { target: 'c@x.com', position: 1 }, { target: 'a@x.com', position: 2 }, { target: 'b@x.com', position: 3 },
    ]);
    db.close();
  });

  it.skipIf(!postgresServerUrl())('on PostgreSQL: the same order', async () => {
    const database = await freshDatabase('target_order');
    const db = new PgDatabase({ url: database.url, poolSize: 1 });
    try {
      const files = migrationFiles(new URL('../../src/storage/postgres/migrations/', import.meta.url));
      await migratePostgres(db, undefined, files.filter((f) => f.version < 34));
      await db.transaction(async (tx) => {
        // Rows without their list and monitor: only the order is under test.
        await tx.query('SET LOCAL session_replication_role = replica');
        for (const t of old) await tx.query('INSERT INTO list_targets (list_id, target) VALUES ($1, $2)', ['l1', t]);
        for (const [i, t] of old.entries()) await tx.query('INSERT INTO monitor_targets (monitor_id, target, added_at) VALUES ($1, $2, $3)', ['m1', t, i === 0 ? 1 : 2]);
      });
      await migratePostgres(db, undefined, files);
      const byAddress = [{ target: 'a@x.com', position: 1 }, { target: 'b@x.com', position: 2 }, { target: 'c@x.com', position: 3 }];
      const byAdded = [{ target: 'c@x.com', position: 1 }, { target: 'a@x.com', position: 2 }, { target: 'b@x.com', position: 3 }];
      expect((await db.query("SELECT target, position FROM list_targets WHERE list_id = 'l1' ORDER BY position")).rows).toEqual(byAddress);
      expect((await db.query("SELECT target, position FROM monitor_targets WHERE monitor_id = 'm1' ORDER BY position")).rows).toEqual(byAdded);
    } finally {
      await db.close();
      await database.drop();
    }
  });
});
