import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importIpSource } from '../../src/lookups/ip/ip-imports.js';
import { silentLogger } from '../../src/shared/logger.js';
import type { IpSourceKind } from '../../src/storage/ip-network-records.js';
import type { Store } from '../../src/storage/store.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { AS2ORG_FILE, ASREL_FILE, PFX2AS_NOV, PFX2AS_OCT, RIR_FILE } from '../lookups/ip-network-fixtures.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, verifyDelivery } from '../support/webhook-receiver.js';
import { driveRuns, runOf, snapshotsOf } from './run-fixtures.js';

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

const load = (store: Store, kind: IpSourceKind, text: string, date?: string) => importIpSource(store.ipNetwork, kind, Readable.from([Buffer.from(text)]), { now: Date.now(), date });
const call = (h: ApiHarness, key: string, method: 'GET' | 'POST', url: string, payload?: object) => h.app.inject({ method, url, headers: bearer(key), ...(payload ? { payload } : {}) });

/** A hijacked address, a moved one, an IPv6 one with a second origin, a quiet one (in input form). */
const TARGETS = ['192.0.2.77', '198.51.100.1', '2001:DB8:100::1', '203.0.113.5'];

describe.each(TEST_STORES)('monitor type ip on %s', (store) => {
  it('sees origin, prefix and registrant changes between runs, and alerts on a possible hijack', async () => {
    const r = await startReceiver({});
    cleanups.push(() => r.close());
    const { env, drop } = await storeEnv(store);
    cleanups.push(drop);
    const h = await openApiHarness({ ...env, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_RATE_LIMIT_PER_MINUTE: '100000' }, undefined, { webhookCa: r.ca });
    const s = h.engine.deps.store;
    const caller = await newAccount(h, { credits: 100 });
    const hook = await call(h, caller.key, 'POST', '/api/webhooks', { url: r.url, events: ['monitor.run.completed', 'monitor.alert.high_value'] });
    const secret = (json(hook).result as { signing_secret: string }).signing_secret;
    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 });
    await load(s, 'rir', RIR_FILE);
    await load(s, 'asnames', AS2ORG_FILE, '2026-11-05');
    await load(s, 'asrel', ASREL_FILE, '2026-11-03');
    await load(s, 'pfx2as', PFX2AS_OCT, '2026-10-01');

    const created = await call(h, caller.key, 'POST', '/api/monitors', { name: 'our ranges', type: 'ip', frequency: 'weekly', targets: TARGETS });
    expect(created.statusCode, created.body).toBe(201);
    const monitor = json(created) as { id: string; tracked_fields: string[] };
    expect(monitor.tracked_fields).toEqual(['prefix', 'origin_asn', 'network', 'rir', 'registrant_org', 'possible_hijack']);
    const run = async () => {
      const queued = json(await call(h, caller.key, 'POST', `/api/agent/monitors/${monitor.id}/run`)) as { id?: string; run_id?: string };
      const runId = (queued.run_id ?? queued.id)!;
      await driveRuns(h.engine, caller.id, [{ monitorId: monitor.id, runId }]);
      return runId;
    };

    const first = await run();
    expect(await runOf(s, caller.id, monitor.id, first)).toMatchObject({ status: 'completed', totalRecords: 4, changesDetected: 0, creditsUsed: 4 });
    const baseline = Object.fromEntries((await snapshotsOf(s, first)).map((x) => [x.target, JSON.parse(x.data)]));
    expect(baseline).toEqual({
      '192.0.2.77': { prefix: '192.0.2.0/23', origin_asn: ['64510'], network: '192.0.2.0/23', rir: 'ripencc', registrant_org: 'Beta Hosting GmbH', possible_hijack: false },
      '198.51.100.1': { prefix: '198.51.100.0/24', origin_asn: ['64501'], network: '198.51.100.0/23', rir: 'lacnic', registrant_org: null, possible_hijack: false },
      '2001:db8:100::1': { prefix: '2001:db8:100::/48', origin_asn: ['64520'], network: '2001:db8::/32', rir: 'apnic', registrant_org: 'Gamma KK', possible_hijack: false },
      '203.0.113.5': { prefix: '203.0.113.0/24', origin_asn: ['64500'], network: '203.0.113.0/24', rir: 'arin', registrant_org: 'Acme Networks, Inc.', possible_hijack: false },
    });
    expect(await sender.tick()).toBe(0);

    // The November snapshot: a more specific hijack, a moved origin, a second origin.
    await load(s, 'pfx2as', PFX2AS_NOV, '2026-11-01');
    const second = await run();
    expect(await runOf(s, caller.id, monitor.id, second)).toMatchObject({ status: 'completed', totalRecords: 4, changesDetected: 3 });
    const changes = Object.fromEntries((await snapshotsOf(s, second, true)).map((x) => [x.target, JSON.parse(x.changes!)]));
    expect(changes).toEqual({
      '192.0.2.77': { prefix: { old: '192.0.2.0/23', new: '192.0.2.0/24' }, origin_asn: { old: ['64510'], new: ['64666'] }, possible_hijack: { old: false, new: true } },
      '198.51.100.1': { origin_asn: { old: ['64501'], new: ['64502'] } },
      '2001:db8:100::1': { origin_asn: { old: ['64520'], new: ['64520', '64667'] }, possible_hijack: { old: false, new: true } },
    });
    expect(await sender.tick()).toBe(2);
    const requests = await r.waitFor(2);
    for (const request of requests) expect(verifyDelivery(request, secret)).toEqual([]);
    const bodies = requests.map((q) => q.json as { event: string; data: Record<string, unknown> });
    expect(bodies.find((b) => b.event === 'monitor.run.completed')!.data).toMatchObject({ run_id: second, type: 'ip', stats: { changes_detected: 3 } });
    const alert = bodies.find((b) => b.event === 'monitor.alert.high_value')!.data as { alerts: { target: string }[]; alert_count: number };
    expect(alert.alert_count).toBe(2);
    expect(alert.alerts.map((a) => a).sort((a, b) => (a.target < b.target ? -1 : 1))).toEqual([
      { target: '192.0.2.77', kind: 'possible_hijack', old: { prefix: '192.0.2.0/23', origin_asn: ['64510'] }, new: { prefix: '192.0.2.0/24', origin_asn: ['64666'] } },
      { target: '2001:db8:100::1', kind: 'possible_hijack', old: { prefix: '2001:db8:100::/48', origin_asn: ['64520'] }, new: { prefix: '2001:db8:100::/48', origin_asn: ['64520', '64667'] } },
    ]);

    // The holder renames itself in the AS names data: a registrant change, no alert.
    await load(s, 'asnames', AS2ORG_FILE.replace('Acme Networks, Inc.', 'Acme Global Networks, Inc.'), '2026-11-10');
    const third = await run();
    expect(await runOf(s, caller.id, monitor.id, third)).toMatchObject({ status: 'completed', changesDetected: 1 });
    expect((await snapshotsOf(s, third, true)).map((x) => [x.target, JSON.parse(x.changes!)])).toEqual([
      ['203.0.113.5', { registrant_org: { old: 'Acme Networks, Inc.', new: 'Acme Global Networks, Inc.' } }],
    ]);
    expect(await sender.tick()).toBe(1);

    // Spec 2.8's snapshots name the target under the type's key, `ip`, as the API gives them.
    const results = json(await call(h, caller.key, 'GET', `/api/monitors/${monitor.id}/runs/${third}/results?changes_only=true`)) as Record<string, unknown>[];
    expect(results).toEqual([
      { ip: '203.0.113.5', target: '203.0.113.5', data: expect.objectContaining({ registrant_org: 'Acme Global Networks, Inc.' }), changes: { registrant_org: { old: 'Acme Networks, Inc.', new: 'Acme Global Networks, Inc.' } }, has_changes: true },
    ]);
    const targets = json(await call(h, caller.key, 'GET', '/api/monitoring/targets?type=ip')) as { targets: { ip: string }[] };
    expect(targets.targets.map((t) => t.ip).sort()).toEqual(['192.0.2.77', '198.51.100.1', '2001:db8:100::1', '203.0.113.5']);
    expect(((await r.waitFor(3))[2]!.json as { event: string }).event).toBe('monitor.run.completed');
  });
}, 120_000);
