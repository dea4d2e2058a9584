import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { trackedFields } from '../../src/monitors/monitor-types.js';
import { closeHarnesses, newAccount, openApiHarness } from '../support/api-harness.js';
import { startMailWorld, type MailWorld } from '../support/mail-world.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';
import { driveRuns, runOf, snapshotsOf } from './run-fixtures.js';

let world: MailWorld;
const cleanups: Array<() => Promise<void>> = [];
beforeAll(async () => {
  world = await startMailWorld();
});
afterEach(async () => {
  await closeHarnesses();
  for (const c of cleanups.splice(0)) await c();
  expect(world.dataAttempts()).toBe(0);
});
afterAll(() => world.stop());

describe('email monitors and validity', () => {
  it('track validity only when asked: it costs a lookup of its own', () => {
    expect(trackedFields('email', undefined)).not.toContain('validity');
    expect(trackedFields('email', ['breached', 'validity'])).toEqual(['breached', 'validity']);
    expect(() => trackedFields('phone', ['validity'])).toThrow(/no field "validity"/);
  });
});

describe.each(TEST_STORES)('an email monitor tracking validity on %s', (store) => {
  it('a mailbox that stops accepting mail is a change; the first run pays each lookup once, the second nothing', async () => {
    const { env, drop } = await storeEnv(store);
    cleanups.push(drop);
    const h = await openApiHarness({ ...env, ...world.env });
    const s = h.engine.deps.store;
    const caller = await newAccount(h, { credits: 100 });
    const ok = world.hosts['ok.test']!;
    const users = ['alice', 'bob', 'carol', 'info'];
    const now = Date.now();
    const monitor = await s.monitors.create(
      { accountId: caller.id, frequency: 'weekly', startAt: now + 86_400_000, now, id: randomUUID(), name: 'mailboxes', type: 'email', trackedFields: ['breached', 'validity'], changeDetection: 'any_change' },
      { targets: ['alice@ok.test', 'bob@ok.test'] },
    );
    const queue = async () => [{ monitorId: monitor.id, runId: (await s.monitors.queueManualRun(caller.id, monitor.id, randomUUID(), Date.now())).id }];

    const first = await queue();
    await driveRuns(h.engine, caller.id, first, 60_000);
    expect(await runOf(s, caller.id, monitor.id, first[0]!.runId)).toMatchObject({ status: 'completed', totalRecords: 2, changesDetected: 0, creditsUsed: 4 });
    const baseline = await snapshotsOf(s, first[0]!.runId);
    expect(baseline.map((x) => [x.target, JSON.parse(x.data).validity])).toEqual([
      ['alice@ok.test', 'valid'],
      ['bob@ok.test', 'valid'],
    ]);

    // bob's mailbox goes away: the server now answers 550 5.1.1 for him.
    const behaviour = ok.behaviour;
    behaviour.users = users.filter((u) => u !== 'bob');
    try {
      const second = await queue();
      await driveRuns(h.engine, caller.id, second, 60_000);
      expect(await runOf(s, caller.id, monitor.id, second[0]!.runId)).toMatchObject({ status: 'completed', changesDetected: 1, creditsUsed: 0 });
      const changed = await snapshotsOf(s, second[0]!.runId, true);
      expect(changed.map((x) => [x.target, JSON.parse(x.changes!)])).toEqual([['bob@ok.test', { validity: { old: 'valid', new: 'invalid' } }]]);
    } finally {
      behaviour.users = users;
    }
  });
});
