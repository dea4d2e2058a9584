import { afterEach, describe, expect, it } from 'vitest';
import { csvCells, csvRecords } from '../../src/jobs/csv-writer.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import { harnessSeeder, type SeedFn, type SeedSnapshot } from './result-fixtures.js';

const T0 = Date.UTC(2026, 2, 2, 9);
const iso = (ms: number) => new Date(ms).toISOString();

afterEach(closeHarnesses);

/** Email snapshots: every other one has changes, one target looks like a formula, one value is a list. */
function emailSnapshots(n: number): SeedSnapshot[] {
  return Array.from({ length: n }, (_, i) => ({
    target: i === 1 ? '=cmd@x.com' : `u${i}@x.com`,
    data: { breached: i % 2 === 0, count: i, services: i % 2 === 0 ? ['Shop, Inc.', 'Forum'] : [], first_breach: null },
    changes: i % 2 === 0 ? { count: { old: 0, new: i }, services: { old: [], new: ['Shop, Inc.', 'Forum'] } } : null,
  }));
}

describe.each(TEST_STORES)('monitor runs and results over the API on %s', (kind) => {
  let h: ApiHarness;
  let seed: SeedFn;
  let alice: string;
  let bob: string;
  let aliceId: string;

  async function setup() {
    h = await openStoreHarness(kind);
    const a = await newAccount(h);
    alice = a.key;
    aliceId = a.id;
    bob = (await newAccount(h)).key;
    const seeder = await harnessSeeder(h);
    seed = seeder.seed;
    h.app.addHook('onClose', seeder.close);
  }

  const get = (key: string, url: string) => h.app.inject({ method: 'GET', url, headers: bearer(key) });

  async function monitor(key: string, body: Record<string, unknown>): Promise<string> {
    const response = await h.app.inject({ method: 'POST', url: '/api/monitors', headers: bearer(key), payload: { name: 'm', frequency: 'weekly', ...body } });
    expect(response.statusCode, response.body).toBe(201);
    return json(response).id;
  }

  it("gives a run's results as a bare array, changes_only, the paged agent list and the CSV, all in one order and agreeing", async () => {
    await setup();
    const mon = await monitor(alice, { type: 'email', tracked_fields: ['breached', 'count', 'services', 'first_breach'] });
    await seed({ id: 'run-1', monitorId: mon, accountId: aliceId, createdAt: T0, snapshots: emailSnapshots(5) });
    const base = `/api/monitors/${mon}/runs/run-1/results`;

    const all = await get(alice, base);
    expect(all.statusCode).toBe(200);
    expect(all.headers['content-type']).toMatch(/^application\/json/);
    const array = json(all);
    expect(array).toHaveLength(5);
    expect(array[0]).toEqual({
      email: 'u0@x.com',
      target: 'u0@x.com',
      data: { breached: true, count: 0, services: ['Shop, Inc.', 'Forum'], first_breach: null },
      changes: { count: { old: 0, new: 0 }, services: { old: [], new: ['Shop, Inc.', 'Forum'] } },
      has_changes: true,
    });
    expect(array[1]).toMatchObject({ email: '=cmd@x.com', changes: null, has_changes: false });
    const changed = json(await get(alice, `${base}?changes_only=true`));
    expect(changed.map((s: { target: string }) => s.target)).toEqual(['u0@x.com', 'u2@x.com', 'u4@x.com']);

    const paged = json(await get(alice, `/api/agent/monitors/${mon}/runs/run-1/results?limit=2&offset=1&changes_only=true`));
    expect(paged).toEqual({ results: changed.slice(1, 3), total: 3, limit: 2, offset: 1 });
    expect(json(await get(alice, `/api/agent/monitors/${mon}/runs/run-1/results`))).toEqual({ results: array, total: 5, limit: 20, offset: 0 });

    const csv = await get(alice, `${base}/download`);
    expect(csv.statusCode).toBe(200);
    expect(csv.headers['content-type']).toMatch(/^text\/csv/);
    expect(csv.headers['content-disposition']).toBe(`attachment; filename="monitor-${mon}-run-run-1.csv"`);
    const records = csvRecords(csv.body).map(csvCells);
    // The tracked fields in the type's order, as the monitor keeps them; lists joined by `;`, as in every CSV Sluice writes.
    expect(records[0]).toEqual(['target', 'has_changes', 'breached', 'count', 'first_breach', 'services', 'changes']);
    expect(records[1]).toEqual(['u0@x.com', 'true', 'true', '0', '', 'Shop, Inc.;Forum', JSON.stringify(array[0].changes)]);
    expect(records[2]).toEqual(["'=cmd@x.com", 'false', 'false', '1', '', '', '']);
    // Every row is the JSON snapshot of the same position, cell for cell.
    expect(records.slice(1).map((r) => [r[0]!.replace(/^'/, ''), r[1], r[3], r[6]])).toEqual(
      array.map((s: { target: string; has_changes: boolean; data: { count: number }; changes: unknown }) => [s.target, String(s.has_changes), String(s.data.count), s.changes === null ? '' : JSON.stringify(s.changes)]),
    );
    const changedCsv = csvRecords((await get(alice, `${base}/download?changes_only=true`)).body).map(csvCells);
    expect(changedCsv.slice(1).map((r) => r[0])).toEqual(changed.map((s: { target: string }) => s.target));
  });

  it("is 404 for another account's monitor or run, and for a run of another monitor; 422 for a bad changes_only", async () => {
    await setup();
    const mine = await monitor(alice, { type: 'email' });
    const other = await monitor(alice, { type: 'email' });
    const theirs = await monitor(bob, { type: 'email' });
    await seed({ id: 'r-mine', monitorId: mine, accountId: aliceId, createdAt: T0, snapshots: emailSnapshots(1) });
    const cases: [string, string, number, string][] = [
      [bob, `/api/monitors/${mine}/runs/r-mine/results`, 404, 'monitor_not_found'],
      [alice, `/api/monitors/${theirs}/runs/r-mine/results`, 404, 'monitor_not_found'],
      [alice, `/api/monitors/${other}/runs/r-mine/results`, 404, 'run_not_found'],
      [alice, `/api/monitors/${other}/runs/r-mine/results/download`, 404, 'run_not_found'],
      [alice, `/api/agent/monitors/${other}/runs/r-mine/results`, 404, 'run_not_found'],
      [bob, `/api/agent/monitors/${mine}/runs`, 404, 'monitor_not_found'],
      [alice, `/api/monitors/${mine}/runs/r-mine/results?changes_only=maybe`, 422, 'invalid_request'],
      [alice, `/api/agent/monitors/${mine}/runs/r-mine/results?limit=101`, 422, 'invalid_request'],
      [alice, '/api/agent/monitoring/results?type=fax', 422, 'unknown_monitor_type'],
      [alice, '/api/agent/monitoring/runs?type=darkweb', 422, 'monitor_type_unsupported'],
    ];
    for (const [key, url, status, code] of cases) {
      const response = await get(key, url);
      expect([url, response.statusCode, json(response).code]).toEqual([url, status, code]);
    }
  });

  it("lists a monitor's runs with their stats, and the account's runs and results by type, each with total, limit and offset", async () => {
    await setup();
    const mail = await monitor(alice, { type: 'email' });
    const tel = await monitor(alice, { type: 'phone', targets: ['+4930123456'] });
    await monitor(bob, { type: 'email' });
    await seed({ id: 'm1', monitorId: mail, accountId: aliceId, createdAt: T0, trigger: 'schedule', jobId: 'job-1', startedAt: T0 + 1000, finishedAt: T0 + 61_000, totalRecords: 5, changesDetected: 3, creditsUsed: 5, snapshots: emailSnapshots(5) });
    await seed({ id: 't1', monitorId: tel, accountId: aliceId, createdAt: T0 + 10, snapshots: [{ target: '+4930123456', data: { breached: true }, changes: null }] });
    await seed({ id: 'm2', monitorId: mail, accountId: aliceId, createdAt: T0 + 20, status: 'running', startedAt: T0 + 30, snapshots: emailSnapshots(2) });

    const runs = json(await get(alice, `/api/agent/monitors/${mail}/runs?limit=1&offset=1`));
    expect(runs).toEqual({
      runs: [
        {
          id: 'm1',
          monitor_id: mail,
          type: 'email',
          status: 'completed',
          trigger: 'schedule',
          period_start: null,
          job_id: 'job-1',
          created_at: iso(T0),
          started_at: iso(T0 + 1000),
          finished_at: iso(T0 + 61_000),
          stats: { total_records: 5, changes_detected: 3, credits_used: 5, duration_ms: 60_000 },
        },
      ],
      total: 2,
      limit: 1,
      offset: 1,
    });

    const everyRun = json(await get(alice, '/api/agent/monitoring/runs'));
    expect([everyRun.total, everyRun.runs.map((r: { id: string; type: string }) => `${r.id}:${r.type}`)]).toEqual([3, ['m2:email', 't1:phone', 'm1:email']]);
    expect(everyRun.runs[0]).toMatchObject({ status: 'running', finished_at: null, stats: { total_records: null, duration_ms: null } });
    const phoneRuns = json(await get(alice, '/api/agent/monitoring/runs?type=phone'));
    expect([phoneRuns.total, phoneRuns.runs.map((r: { id: string }) => r.id)]).toEqual([1, ['t1']]);
    expect(json(await get(bob, '/api/agent/monitoring/runs')).total).toBe(0);

    const results = json(await get(alice, '/api/agent/monitoring/results?limit=2'));
    expect(results.total).toBe(6);
    expect(results.results[0]).toEqual({ run_id: 't1', monitor_id: tel, type: 'phone', phone: '+4930123456', target: '+4930123456', data: { breached: true }, changes: null, has_changes: false });
    expect(results.results[1]).toMatchObject({ run_id: 'm1', type: 'email', email: 'u0@x.com', has_changes: true });
    const changes = json(await get(alice, '/api/agent/monitoring/results?type=email&changes_only=true&offset=1'));
    expect([changes.total, changes.results.map((s: { target: string }) => s.target)]).toEqual([3, ['u2@x.com', 'u4@x.com']]);
  });
});
