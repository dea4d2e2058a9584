import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { runJobId } from '../../src/monitors/run-starter.js';
import { silentLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, verifyDelivery, type Receiver } from '../support/webhook-receiver.js';
import { driveRuns, emailTarget, importFirstBreaches, importMoreBreaches, phoneTarget, reimported, runOf, snapshotsOf } from './run-fixtures.js';

/** Targets per monitor: 10,000 in all, an email monitor and a phone monitor. */
const N = 5_000;
const cleanups: Array<() => Promise<void>> = [];

afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

async function subscribe(h: ApiHarness, key: string, r: Receiver): Promise<string> {
  const created = await h.app.inject({
    method: 'POST',
    url: '/api/webhooks',
    headers: bearer(key),
    payload: { url: r.url, events: ['monitor.run.completed', 'monitor.alert.high_value'] },
  });
  expect(created.statusCode, created.body).toBe(200);
  return (json(created).result as { signing_secret: string }).signing_secret;
}

/** What the re-import changes for email target i, on every field (the email monitor tracks all, any_change). */
function emailChanges(i: number) {
  if (i % 4 === 0) {
    return {
      count: { old: 1, new: 2 },
      last_breach: { old: '2020-03-01', new: '2024-05-01' },
      services: { old: ['AlphaLeak'], new: ['AlphaLeak', 'BetaLeak'] },
      exposed_data: { old: ['Email addresses', 'Names'], new: ['Email addresses', 'Names', 'Passwords'] },
      breaches: { old: ['AlphaLeak'], new: ['AlphaLeak', 'BetaLeak'] },
    };
  }
  return {
    breached: { old: false, new: true },
    count: { old: 0, new: 1 },
    first_breach: { old: null, new: '2024-05-01' },
    last_breach: { old: null, new: '2024-05-01' },
    services: { old: [], new: ['BetaLeak'] },
    exposed_data: { old: [], new: ['Email addresses', 'Passwords'] },
    breaches: { old: [], new: ['BetaLeak'] },
  };
}

/**
 * What the re-import changes for phone target i under new_only: what appears (a first breach, a
 * count that grew, a date where there was none); a later last date or a reworded summary is not.
 */
function phoneChanges(i: number) {
  if (i % 4 === 0) return { total_breaches: { old: 1, new: 2 } };
  return {
    breached: { old: false, new: true },
    total_breaches: { old: 0, new: 1 },
    first_breached: { old: null, new: '2024-02-01' },
    last_breached: { old: null, new: '2024-02-01' },
  };
}

describe.each(TEST_STORES)('monitor runs on the engine, on %s', (store) => {
  it('a first run is the baseline; after a re-import exactly the re-imported targets change, with their old and new values, announced once', async () => {
    const r = await startReceiver({});
    cleanups.push(() => r.close());
    const { env, drop } = await storeEnv(store);
    cleanups.push(drop);
    const h = await openApiHarness({ ...env, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_CHUNK_ROWS: '1000', SLUICE_BATCH_ROWS: '250' }, undefined, { webhookCa: r.ca });
    const s = h.engine.deps.store;
    const caller = await newAccount(h, { credits: 30_000 });
    const secret = await subscribe(h, caller.key, r);
    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 });
    await importFirstBreaches(s, N);

    const now = Date.now();
    const base = { accountId: caller.id, frequency: 'weekly' as const, startAt: now + 86_400_000, now };
    const emails = await s.monitors.create(
      { ...base, id: randomUUID(), name: 'staff emails', type: 'email', trackedFields: ['breached', 'count', 'first_breach', 'last_breach', 'services', 'exposed_data', 'breaches'], changeDetection: 'any_change' },
      { targets: Array.from({ length: N }, (_, i) => emailTarget(i)) },
    );
    const phones = await s.monitors.create(
      { ...base, id: randomUUID(), name: 'staff phones', type: 'phone', trackedFields: ['breached', 'total_breaches', 'first_breached', 'last_breached', 'summary'], changeDetection: 'new_only' },
      { targets: Array.from({ length: N }, (_, i) => phoneTarget(i)) },
    );

    const queue = async () => {
      const runs = [];
      for (const m of [emails, phones]) runs.push({ monitorId: m.id, runId: (await s.monitors.queueManualRun(caller.id, m.id, randomUUID(), Date.now())).id });
      return runs;
    };

    // First run: every target is looked up and paid for once; nothing is a change, nothing is sent.
    const first = await queue();
    await driveRuns(h.engine, caller.id, first);
    for (const { monitorId, runId } of first) {
      expect(await runOf(s, caller.id, monitorId, runId)).toMatchObject({ status: 'completed', totalRecords: N, changesDetected: 0, creditsUsed: N, jobId: runJobId(runId) });
      expect(await snapshotsOf(s, runId, true)).toEqual([]);
      const snapshots = await snapshotsOf(s, runId);
      expect(snapshots.map((x) => x.seq)).toEqual(Array.from({ length: N }, (_, i) => i));
      expect((await h.engine.deps.jobs.require(runJobId(runId))).options.fresh).toBe(true);
    }
    const firstEmail = await snapshotsOf(s, first[0]!.runId);
    expect(JSON.parse(firstEmail.find((x) => x.target === emailTarget(4))!.data)).toEqual({
      breached: true, count: 1, first_breach: '2020-03-01', last_breach: '2020-03-01', services: ['AlphaLeak'], exposed_data: ['Email addresses', 'Names'], breaches: ['AlphaLeak'],
    });
    expect(await sender.tick()).toBe(0);
    expect((await h.engine.deps.billing.account(caller.id))!.credits).toBe(30_000 - 2 * N);

    // Second run after a re-import: exactly the re-imported targets change; every target was paid
    // for within the window, so the run is free.
    await importMoreBreaches(s, N);
    const second = await queue();
    await driveRuns(h.engine, caller.id, second);
    const changed = Array.from({ length: N }, (_, i) => i).filter(reimported);
    for (const [k, { monitorId, runId }] of second.entries()) {
      const target = k === 0 ? emailTarget : phoneTarget;
      const expected = k === 0 ? emailChanges : phoneChanges;
      expect(await runOf(s, caller.id, monitorId, runId)).toMatchObject({ status: 'completed', totalRecords: N, changesDetected: changed.length, creditsUsed: 0 });
      const snapshots = await snapshotsOf(s, runId, true);
      expect(snapshots.map((x) => x.target).sort()).toEqual(changed.map(target).sort());
      for (const snapshot of snapshots) {
        const i = changed.find((j) => target(j) === snapshot.target)!;
        expect(JSON.parse(snapshot.changes!), snapshot.target).toEqual(expected(i));
      }
    }
    expect((await h.engine.deps.billing.account(caller.id))!.credits).toBe(30_000 - 2 * N);

    // One monitor.run.completed per monitor, and one alert event each: passwords exposed for every
    // re-imported email, a first breach for the phones that had none.
    expect(await sender.tick()).toBe(4);
    const requests = await r.waitFor(4);
    for (const request of requests) expect(verifyDelivery(request, secret)).toEqual([]);
    const bodies = requests.map((q) => q.json as any);
    const completed = bodies.filter((b) => b.event === 'monitor.run.completed');
    expect(completed.map((b) => b.data.run_id).sort()).toEqual(second.map((x) => x.runId).sort());
    for (const body of completed) {
      expect(body.data).toMatchObject({ status: 'completed', stats: { total_records: N, changes_detected: changed.length, credits_used: 0 } });
      expect(body.data.stats.duration_ms).toBeGreaterThanOrEqual(0);
      const csv = await (await fetch(body.data.changes_url)).text();
      const lines = csv.trim().split('\n');
      expect(lines[0]).toBe('target,field,old,new');
      const fields = body.data.type === 'email' ? changed.map((i) => Object.keys(emailChanges(i)).length) : changed.map((i) => Object.keys(phoneChanges(i)).length);
      expect(lines.length - 1).toBe(fields.reduce((a, b) => a + b, 0));
    }
    const alerts = bodies.filter((b) => b.event === 'monitor.alert.high_value');
    const byType = Object.fromEntries(alerts.map((b) => [b.data.type, b.data]));
    expect(byType.email).toMatchObject({ alert_count: changed.length, alerts_truncated: true });
    expect(byType.email.alerts).toHaveLength(100);
    expect(byType.email.alerts[0]).toMatchObject({ target: emailTarget(changed[0]!), kind: 'passwords_exposed' });
    expect(byType.phone.alert_count).toBe(changed.filter((i) => i % 4 !== 0).length);
    expect(byType.phone.alerts.every((a: any) => a.kind === 'newly_breached')).toBe(true);

    // Driving again finds nothing to do and sends nothing more: each event once per run.
    const third = await queue();
    await driveRuns(h.engine, caller.id, third);
    for (const { monitorId, runId } of third) expect(await runOf(s, caller.id, monitorId, runId)).toMatchObject({ status: 'completed', changesDetected: 0 });
    expect(await sender.tick()).toBe(0);
    expect(r.messageIds()).toHaveLength(4);
  }, 240_000);
});
