import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { EMAIL_BREACHES_KIND, emailBreachResult } from '../../src/lookups/email/embedded-email-breach-index.js';
import type { LookupProvider } from '../../src/lookups/lookup-provider.js';
import { runJobId } from '../../src/monitors/run-starter.js';
import { engineScope, TEST_STORES } from '../support/test-engine.js';
import { driveRuns, emailTarget, runOf, snapshotsOf } from './run-fixtures.js';

/**
 * A remote breach service whose answers change when `breached` does. It does not answer locally,
 * so the engine caches its answers for the window, as it would a real remote service's.
 */
function remoteBreaches(breached: Set<string>): LookupProvider {
  return {
    kind: EMAIL_BREACHES_KIND,
    name: 'fake-remote-email-breaches',
    maxBatch: 100,
    async lookup(keys) {
      return keys.map((key) => ({ ok: true, result: emailBreachResult(key, breached.has(key) ? [{ breach: 'Remote', breachedAt: '2024-01-01', dataClasses: ['Passwords'] }] : []) }));
    },
  };
}

describe.each(TEST_STORES)('monitor runs against a remote provider, on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  // Without `fresh`, the second run's job reads the first run's answers from the result cache and
  // sees no change at all.
  it('look every target up afresh, so a change the service knows of is seen within the cache window', async () => {
    const e = await engines.open();
    const breached = new Set<string>();
    (e.deps.providers as Map<string, LookupProvider>).set(EMAIL_BREACHES_KIND, remoteBreaches(breached));
    const account = await e.deps.billing.createAccount({ credits: 1_000, now: Date.now() });
    const now = Date.now();
    const targets = Array.from({ length: 40 }, (_, i) => emailTarget(i));
    await e.deps.store.monitors.create(
      { id: 'm', accountId: account.id, name: 'remote', type: 'email', frequency: 'weekly', trackedFields: ['breached'], changeDetection: 'any_change', startAt: now + 86_400_000, now },
      { targets },
    );
    const run = async () => {
      const runId = (await e.deps.store.monitors.queueManualRun(account.id, 'm', randomUUID(), Date.now())).id;
      await driveRuns(e, account.id, [{ monitorId: 'm', runId }]);
      return runId;
    };
    const first = await run();
    expect(await e.deps.results.getMany(EMAIL_BREACHES_KIND, [targets[0]!], 0)).toHaveProperty('size', 1);
    breached.add(targets[7]!);
    const second = await run();
    expect(await runOf(e.deps.store, account.id, 'm', second)).toMatchObject({ status: 'completed', changesDetected: 1, creditsUsed: 0 });
    expect((await snapshotsOf(e.deps.store, second, true)).map((s) => [s.target, JSON.parse(s.changes!)])).toEqual([[targets[7], { breached: { old: false, new: true } }]]);
    expect((await e.deps.jobs.require(runJobId(first))).creditsUsed).toBe(40);
  });
});
