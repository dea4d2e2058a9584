import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { silentLogger } from '../../src/shared/logger.js';
import { webhookSender } from '../../src/webhooks/webhooks.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { domainWorldEnv, rdapDoc, startDomainWorld, type DomainWorld } from '../support/domain-world.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { startReceiver, verifyDelivery } from '../support/webhook-receiver.js';
import { driveRuns, runOf, snapshotsOf } from './run-fixtures.js';

let world: DomainWorld;
beforeAll(async () => {
  world = await startDomainWorld();
});
afterAll(async () => world.stop());
const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
});

const call = (h: ApiHarness, key: string, method: 'GET' | 'POST', url: string, payload?: object) => h.app.inject({ method, url, headers: bearer(key), ...(payload ? { payload } : {}) });

describe.each(TEST_STORES)('monitor type domain on %s', (store) => {
  it('sees record, registrar, expiry and new-subdomain changes between runs, and alerts on a registrar transfer', async () => {
    // Each store's test starts from the world's first state.
    world.dns.set('plain.test', { a: ['127.0.0.1'], ttl: 0 }); // TTL 0: the shared DNS layer's cache keeps nothing
    world.rdap['site.test'] = rdapDoc('Example Registrar, Inc.', '2030-01-01T00:00:00Z');
    world.ct['site.test'] = world.ct['site.test']!.filter((n) => n.name !== 'new.site.test');
    const r = await startReceiver({});
    cleanups.push(() => r.close());
    const { env, drop } = await storeEnv(store);
    cleanups.push(drop);
    const h = await openApiHarness({ ...env, ...domainWorldEnv(world), SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' }, undefined, { webhookCa: r.ca });
    const s = h.engine.deps.store;
    const caller = await newAccount(h, { credits: 100 });
    const hook = await call(h, caller.key, 'POST', '/api/webhooks', { url: r.url, events: ['monitor.run.completed', 'monitor.alert.high_value'] });
    const secret = (json(hook).result as { signing_secret: string }).signing_secret;
    const sender = webhookSender(h.engine.webhooks, h.engine.deps.clock, silentLogger(), { pollMs: 20 });

    const created = await call(h, caller.key, 'POST', '/api/monitors', { name: 'our domains', type: 'domain', frequency: 'weekly', targets: ['Site.Test', 'plain.test'] });
    expect(created.statusCode, created.body).toBe(201);
    const monitor = json(created) as { id: string; tracked_fields: string[] };
    expect(monitor.tracked_fields).toEqual(['a', 'aaaa', 'mx', 'ns', 'txt', 'caa', 'registrar', 'expires_at', 'subdomains']);
    const run = async () => {
      const queued = json(await call(h, caller.key, 'POST', `/api/agent/monitors/${monitor.id}/run`)) as { id?: string; run_id?: string };
      const runId = (queued.run_id ?? queued.id)!;
      await driveRuns(h.engine, caller.id, [{ monitorId: monitor.id, runId }]);
      return runId;
    };

    const first = await run();
    expect(await runOf(s, caller.id, monitor.id, first)).toMatchObject({ status: 'completed', totalRecords: 2, changesDetected: 0 });
    const baseline = Object.fromEntries((await snapshotsOf(s, first)).map((x) => [x.target, JSON.parse(x.data)]));
    expect(baseline['site.test']).toEqual({
      a: ['127.0.0.1'],
      aaaa: ['::1'],
      mx: ['10 mx.site.test'],
      ns: ['ns1.site.test', 'ns2.site.test'],
      txt: ['google-site-verification=xyz', 'v=spf1 mx -all'],
      caa: ['0 iodef "mailto:ca@site.test"', '0 issue "letsencrypt.org"'],
      registrar: 'Example Registrar, Inc.',
      expires_at: '2030-01-01T00:00:00Z',
      subdomains: ['api.site.test', 'old.site.test', 'www.site.test'],
    });
    expect(baseline['plain.test']).toMatchObject({ a: ['127.0.0.1'], registrar: null, subdomains: [] });
    expect(await sender.tick()).toBe(0);

    // Between runs: plain.test moves, site.test is transferred and renewed, and a certificate is issued for a new name.
    world.dns.set('plain.test', { a: ['127.0.0.2'], ttl: 0 });
    world.rdap['site.test'] = rdapDoc('Other Registrar LLC', '2031-01-01T00:00:00Z');
    world.ct['site.test']!.push({ name: 'new.site.test', first_seen: '2026-11-01T00:00:00Z' });
    const second = await run();
    expect(await runOf(s, caller.id, monitor.id, second)).toMatchObject({ status: 'completed', totalRecords: 2, changesDetected: 2 });
    const changes = Object.fromEntries((await snapshotsOf(s, second, true)).map((x) => [x.target, JSON.parse(x.changes!)]));
    expect(changes).toEqual({
      'plain.test': { a: { old: ['127.0.0.1'], new: ['127.0.0.2'] } },
      'site.test': {
        registrar: { old: 'Example Registrar, Inc.', new: 'Other Registrar LLC' },
        expires_at: { old: '2030-01-01T00:00:00Z', new: '2031-01-01T00:00:00Z' },
        subdomains: { old: ['api.site.test', 'old.site.test', 'www.site.test'], new: ['api.site.test', 'new.site.test', 'old.site.test', 'www.site.test'] },
      },
    });
    expect(await sender.tick()).toBe(2);
    const requests = await r.waitFor(2);
    for (const request of requests) expect(verifyDelivery(request, secret)).toEqual([]);
    const bodies = requests.map((q) => q.json as { event: string; data: Record<string, unknown> });
    expect(bodies.find((b) => b.event === 'monitor.run.completed')!.data).toMatchObject({ run_id: second, type: 'domain', stats: { changes_detected: 2 } });
    expect((bodies.find((b) => b.event === 'monitor.alert.high_value')!.data as { alerts: unknown[] }).alerts).toEqual([
      { target: 'site.test', kind: 'registrar_changed', old: { registrar: 'Example Registrar, Inc.', expires_at: '2030-01-01T00:00:00Z' }, new: { registrar: 'Other Registrar LLC', expires_at: '2031-01-01T00:00:00Z' } },
    ]);

    // Nothing moved: no change, and spec 2.8's snapshots name the target under `domain`.
    const third = await run();
    expect(await runOf(s, caller.id, monitor.id, third)).toMatchObject({ status: 'completed', changesDetected: 0 });
    const results = json(await call(h, caller.key, 'GET', `/api/monitors/${monitor.id}/runs/${third}/results`)) as Record<string, unknown>[];
    expect(results.map((x) => [x.domain, x.target, x.has_changes])).toEqual(expect.arrayContaining([['site.test', 'site.test', false], ['plain.test', 'plain.test', false]]));
  });
}, 120_000);
