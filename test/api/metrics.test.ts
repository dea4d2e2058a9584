import parsePrometheusTextFormat, { type PromFamily, type PromSample } from 'parse-prometheus-text-format';
import { afterEach, describe, expect, it } from 'vitest';
import { startMetricsListener } from '../../src/shared/metrics-listener.js';
import { silentLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, runUntilDone, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver } from '../support/webhook-receiver.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  await closeHarnesses();
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

// ok rows, an invalid cell and a repeated address: three row statuses in one job.
const EMAILS = ['maria.rossi@example.com', 'john.smith@example.com', 'anna.schmidt@example.org', 'info@example.com'];
const CSV = ['email', ...EMAILS, 'not-an-email', 'maria.rossi@example.com'].join('\n');

async function scrape(h: ApiHarness, headers: Record<string, string> = {}): Promise<{ status: number; contentType: string; families: Map<string, PromFamily>; text: string }> {
  const response = await h.app.inject({ method: 'GET', url: '/metrics', headers });
  const families = response.statusCode === 200 ? new Map(parsePrometheusTextFormat(response.body).map((f) => [f.name, f])) : new Map<string, PromFamily>();
  return { status: response.statusCode, contentType: String(response.headers['content-type']), families, text: response.body };
}

/**
 * A labelled histogram's `_count`, read from the text itself: parse-prometheus-text-format merges
 * the series of a labelled histogram into one and drops their labels, counts and sums.
 */
function histogramCount(text: string, name: string, labels: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${name}_count{`) && l.includes(labels));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1));
}

function sample(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): PromSample | undefined {
  return families.get(name)?.metrics.find((m) => Object.entries(labels).every(([k, v]) => m.labels?.[k] === v));
}

function value(families: Map<string, PromFamily>, name: string, labels: Record<string, string> = {}): number {
  return Number(sample(families, name, labels)?.value ?? 0);
}

describe.each(TEST_STORES)('GET /metrics on %s', (store) => {
  async function harness(env: Record<string, string> = {}): Promise<ApiHarness> {
    const placed = await storeEnv(store);
    cleanups.push(placed.drop);
    return openApiHarness({ ...placed.env, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', ...env });
  }

  it('after a job, counts its committed rows by status and exactly the credits its ledger holds, with no account id or key in any label', async () => {
    const r = await startReceiver({ behaviour: () => ({ status: 500, body: 'down' }) });
    cleanups.push(() => r.close());
    const h = await harness();
    const a = await newAccount(h, { credits: 100 });
    const hook = await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(a.key), payload: { url: r.url, events: ['bulk.completed'] } });
    expect(hook.statusCode, hook.body).toBe(200);
    const upload = await uploadCsv(h, a.key, CSV);
    expect(upload.statusCode).toBe(202);
    const id = json(upload).id as string;
    await runUntilDone(h, [id]);
    const job = await h.engine.deps.jobs.require(id);
    expect(job.status).toBe('completed');
    // A receiver answering 500: the attempt is counted as one to try again.
    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20, metrics: h.engine.deps.metrics });
    expect(await sender.tick()).toBe(1);

    const { status, contentType, families, text } = await scrape(h);
    expect(status).toBe(200);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const rows = (s: string) => value(families, 'sluice_rows_processed_total', { type: 'gender', status: s });
    expect(job.invalidRows).toBe(1);
    expect(job.duplicateRows).toBe(1);
    expect({ ok: rows('ok'), invalid: rows('invalid'), duplicate: rows('duplicate'), error: rows('error') }).toEqual({
      ok: job.processedRows - job.invalidRows - job.duplicateRows - job.errorRows,
      invalid: job.invalidRows,
      duplicate: job.duplicateRows,
      error: job.errorRows,
    });
    const ledger = await h.engine.deps.billing.ledger(a.id);
    const charged = -ledger.filter((e) => e.jobId === id).reduce((sum, e) => sum + e.delta, 0);
    expect(charged).toBe(EMAILS.length);
    expect(value(families, 'sluice_credits_charged_total')).toBe(charged);
    expect(job.creditsUsed).toBe(charged);

    expect(value(families, 'sluice_jobs', { status: 'completed' })).toBe(1);
    expect(value(families, 'sluice_jobs', { status: 'running' })).toBe(0);
    expect(families.get('sluice_jobs')?.type).toBe('GAUGE');
    expect(families.get('sluice_checkpoint_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(Number(sample(families, 'sluice_checkpoint_duration_seconds')?.count)).toBeGreaterThanOrEqual(1);
    expect(families.get('sluice_lookup_duration_seconds')?.type).toBe('HISTOGRAM');
    expect(Number(families.get('sluice_lookup_duration_seconds')?.metrics[0]?.buckets?.['+Inf'])).toBeGreaterThanOrEqual(1);
    expect(histogramCount(text, 'sluice_lookup_duration_seconds', 'provider="embedded-gender",outcome="ok"')).toBeGreaterThanOrEqual(1);
    expect(value(families, 'sluice_lookups_in_flight', { provider: 'embedded-gender' })).toBe(0);
    expect(value(families, 'sluice_webhook_deliveries_total', { outcome: 'retry' })).toBe(1);
    expect(value(families, 'sluice_webhook_deliveries_total', { outcome: 'success' })).toBe(0);
    for (const name of ['sluice_object_store_errors_total', 'sluice_database_errors_total', 'nodejs_eventloop_lag_seconds', 'process_cpu_user_seconds_total', 'process_resident_memory_bytes']) {
      expect(families.has(name), name).toBe(true);
    }

    const secrets = [a.id, a.key, a.keyId, a.email, id, ...EMAILS];
    // Histogram labels are read from the text (the parser drops them); the rest from the parser.
    const labelValues = [
      ...[...families.values()].flatMap((f) => f.metrics.flatMap((m) => Object.values(m.labels ?? {}))),
      ...[...text.matchAll(/\w+="([^"]*)"/g)].map((m) => m[1]!),
    ];
    expect(labelValues.length).toBeGreaterThan(0);
    for (const label of labelValues) for (const secret of secrets) expect(label).not.toContain(secret);
  });

  it('asks for SLUICE_METRICS_TOKEN as a bearer token when one is set, and is absent with SLUICE_METRICS=false', async () => {
    const guarded = await harness({ SLUICE_METRICS_TOKEN: 'scrape-me-please' });
    expect((await scrape(guarded)).status).toBe(401);
    expect((await scrape(guarded, bearer('scrape-me-pleasf'))).status).toBe(401);
    const allowed = await scrape(guarded, bearer('scrape-me-please'));
    expect(allowed.status).toBe(200);
    expect(allowed.families.has('sluice_rows_processed_total')).toBe(true);

    const off = await harness({ SLUICE_METRICS: 'false' });
    expect((await scrape(off)).status).toBe(404);
  });
});

describe('metrics outside the API', () => {
  it('two engines in one process keep registries of their own, and /metrics is not in the OpenAPI document', async () => {
    const one = await openApiHarness();
    const two = await openApiHarness();
    one.engine.deps.metrics.creditsCharged.inc(5);
    expect(value((await scrape(one)).families, 'sluice_credits_charged_total')).toBe(5);
    expect(value((await scrape(two)).families, 'sluice_credits_charged_total')).toBe(0);
    const document = json(await one.app.inject({ method: 'GET', url: '/api/openapi.json' }));
    expect(Object.keys(document.paths)).not.toContain('/metrics');
  });

  it('counts a store operation that fails for a fault of the database under its port and method, and not a refusal', async () => {
    const h = await openApiHarness();
    const errors = async () => {
      // The parser drops a last sample that no newline ends, as a scrape's text always has.
      const text = `${await h.engine.deps.metrics.registry.getSingleMetricAsString('sluice_database_errors_total')}\n`;
      return new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
    };
    await expect(h.engine.jobService.get('job_missing')).rejects.toMatchObject({ statusCode: 404 });
    // Every operation is present at 0 from start (issue 33): a refusal leaves them all there.
    expect(((await errors()).get('sluice_database_errors_total')?.metrics ?? []).filter((m) => m.value !== '0')).toEqual([]);
    expect(value(await errors(), 'sluice_database_errors_total', { operation: 'jobs.get' })).toBe(0);
    await h.engine.deps.store.close();
    await expect(h.engine.deps.jobs.get('job_missing')).rejects.toThrow();
    expect(value(await errors(), 'sluice_database_errors_total', { operation: 'jobs.get' })).toBe(1);
  });

  it('a worker\'s listener serves the registry on loopback, only at /metrics, and honours the token', async () => {
    const h = await openApiHarness();
    h.engine.deps.metrics.rowsProcessed.inc({ type: 'gender', status: 'ok' }, 3);
    const listener = await startMetricsListener(h.engine.deps.metrics.registry, { host: '127.0.0.1', port: 0, token: 'tok' });
    cleanups.push(() => listener.close());
    const base = `http://127.0.0.1:${listener.address.port}`;
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    expect((await fetch(`${base}/other`, { headers: bearer('tok') })).status).toBe(404);
    const response = await fetch(`${base}/metrics`, { headers: bearer('tok') });
    expect(response.status).toBe(200);
    const families = new Map(parsePrometheusTextFormat(await response.text()).map((f) => [f.name, f]));
    expect(value(families, 'sluice_rows_processed_total', { type: 'gender', status: 'ok' })).toBe(3);
  });
});
