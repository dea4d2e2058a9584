import { randomUUID } from 'node:crypto';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, runUntilDone, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import { driveRuns, emailTarget, importFirstBreaches, importMoreBreaches } from '../monitors/run-fixtures.js';

/**
 * Issue 33, item 4: what an operator alerts on. HTTP requests by route template, method and status
 * class with a duration histogram; monitor runs started, ended and their changes; the pending
 * deliveries gauge; every error counter present at 0 from start; names `promtool check metrics`
 * accepts (no gauge named `_total`).
 */
afterEach(closeHarnesses);

type Family = { name: string; type: string; metrics: { value?: string; labels?: Record<string, string> }[] };

async function scrape(h: ApiHarness): Promise<Map<string, Family>> {
  const response = await h.app.inject({ method: 'GET', url: '/metrics' });
  expect(response.statusCode).toBe(200);
  return new Map((parsePrometheusTextFormat(response.body) as Family[]).map((f) => [f.name, f]));
}

const series = (f: Family | undefined, labels: Record<string, string>) => f?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));

describe.each(TEST_STORES)('operator metrics on %s', (kind) => {
  it('has every error counter and the backlog gauge at 0 from start, and no gauge named like a counter', async () => {
    const h = await openStoreHarness(kind);
    const families = await scrape(h);
    for (const outcome of ['success', 'retry', 'failed', 'lost']) expect(series(families.get('sluice_webhook_deliveries_total'), { outcome })?.value, outcome).toBe('0');
    for (const operation of ['GetObjectCommand', 'PutObjectCommand', 'DeleteObjectCommand']) expect(series(families.get('sluice_object_store_errors_total'), { operation })?.value, operation).toBe('0');
    const database = families.get('sluice_database_errors_total')!;
    expect(database.metrics.length).toBeGreaterThan(20);
    expect(database.metrics.every((m) => m.value === '0')).toBe(true);
    expect(series(database, { operation: 'jobs.create' })?.value).toBe('0');
    for (const outcome of ['completed', 'failed', 'cancelled']) expect(series(families.get('sluice_monitor_runs_ended_total'), { outcome })?.value).toBe('0');
    expect(families.get('sluice_monitor_runs_started_total')?.metrics[0]?.value).toBe('0');
    expect(families.get('sluice_webhook_deliveries_pending')).toMatchObject({ type: 'GAUGE', metrics: [{ value: '0' }] });
    // promtool: a `_total` suffix promises a counter.
    expect([...families.values()].filter((f) => f.type !== 'COUNTER' && f.name.endsWith('_total')).map((f) => f.name)).toEqual([]);
    expect(families.get('nodejs_active_handles')?.type).toBe('GAUGE');
  });

  it('shows the deliveries waiting to be sent as a gauge', async () => {
    const h = await openStoreHarness(kind, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    const { key } = await newAccount(h);
    const hook = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url: 'http://127.0.0.1:9/never-sent', events: ['bulk.completed'] } });
    expect(hook.statusCode, hook.body).toBe(200);
    const id = json(await uploadCsv(h, key, 'email\nanna.schmidt@example.com\n')).id;
    await runUntilDone(h, [id]);
    // No sender runs here: the relayed event waits, and the gauge says so.
    expect(await h.engine.deps.store.deliveries.relayOutbox(Date.now())).toBe(1);
    expect((await scrape(h)).get('sluice_webhook_deliveries_pending')?.metrics[0]?.value).toBe('1');
  });

  it('counts HTTP requests by route template, method and status class, with their durations', async () => {
    const h = await openStoreHarness(kind);
    const { key } = await newAccount(h);
    await h.app.inject({ method: 'GET', url: '/api/account', headers: bearer(key) });
    await h.app.inject({ method: 'GET', url: '/api/jobs/job_nope', headers: bearer(key) });
    await h.app.inject({ method: 'GET', url: '/api/jobs/job_other', headers: bearer(key) });
    await h.app.inject({ method: 'GET', url: '/no/such/path' });
    const families = await scrape(h);
    const requests = families.get('sluice_http_requests_total');
    expect(series(requests, { route: '/api/account', method: 'GET', status_class: '2xx' })?.value).toBe('1');
    expect(series(requests, { route: '/api/jobs/:id', method: 'GET', status_class: '4xx' })?.value).toBe('2');
    expect(series(requests, { route: 'unmatched', method: 'GET', status_class: '4xx' })?.value).toBe('1');
    // No id and no raw URL in any label.
    expect(requests!.metrics.some((m) => JSON.stringify(m.labels).includes('job_nope'))).toBe(false);
    // The text parser drops a labelled histogram's labels: its count line, read as text.
    const text = (await h.app.inject({ method: 'GET', url: '/metrics' })).body;
    const count = text.split('\n').find((l) => l.startsWith('sluice_http_request_duration_seconds_count{') && l.includes('route="/api/jobs/:id"') && l.includes('status_class="4xx"'));
    expect(count?.split(' ').pop()).toBe('2');
  });

  it('counts monitor runs started and completed, and the changes they found', async () => {
    const h = await openStoreHarness(kind, { SLUICE_CHUNK_ROWS: '1000', SLUICE_BATCH_ROWS: '250' });
    const s = h.engine.deps.store;
    const caller = await newAccount(h, { credits: 1_000 });
    const N = 10;
    await importFirstBreaches(s, N);
    const now = Date.now();
    const monitor = await s.monitors.create(
      { accountId: caller.id, frequency: 'weekly', startAt: now + 86_400_000, now, id: randomUUID(), name: 'staff', type: 'email', trackedFields: ['breached', 'count'], changeDetection: 'any_change' },
      { targets: Array.from({ length: N }, (_, i) => emailTarget(i)) },
    );
    const run = async () => {
      const runId = (await s.monitors.queueManualRun(caller.id, monitor.id, randomUUID(), Date.now())).id;
      await driveRuns(h.engine, caller.id, [{ monitorId: monitor.id, runId }]);
    };
    await run();
    await importMoreBreaches(s, N);
    await run();
    const families = await scrape(h);
    expect(families.get('sluice_monitor_runs_started_total')?.metrics[0]?.value).toBe('2');
    expect(series(families.get('sluice_monitor_runs_ended_total'), { outcome: 'completed' })?.value).toBe('2');
    // The re-import changes target 3 of 10 (run-fixtures' `reimported`).
    expect(families.get('sluice_monitor_changes_total')?.metrics[0]?.value).toBe('1');
  });
});
