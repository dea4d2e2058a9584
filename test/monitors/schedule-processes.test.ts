import path from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/child-worker.js';
import { cliEnv, exitWithin, killChildren, parseJson, removeScratchDirs, runCli, scratchDir, spawnCli } from '../support/cli-process.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 20's schedule with real processes: two `sluice worker`s started together on one store,
 * after monitors have been left unrun for three weeks (they were created with a start three weeks
 * back, as a service that was down would find them). Each monitor gets one run, for its latest
 * period, however the two processes' ticks interleave, and next_run_at moves past now. The store
 * contract suite races the claims themselves over a fake clock; this is the same rule end to end.
 * On the built dist: `npm run build` first.
 */
const WEEK_MS = 7 * 24 * 3_600_000;
const HOUR_MS = 3_600_000;
const drops: (() => Promise<void>)[] = [];

afterEach(async () => {
  await killChildren();
});
afterAll(async () => {
  await Promise.all(drops.map((drop) => drop()));
  removeScratchDirs();
});

async function ok(args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, any>> {
  const result = await runCli([...args, '--json'], env);
  expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
  return parseJson(result);
}

describe.each(TEST_STORES)('two sluice workers on %s after three weeks of downtime', (store) => {
  it('give each weekly monitor one catch-up run, for its latest period, and move next_run_at past now', async () => {
    const placed = await storeEnv(store);
    drops.push(placed.drop);
    const env = cliEnv(path.join(scratchDir(`sluice-schedule-${store}-`), 'data'), { ...placed.env, SLUICE_POLL_MS: '20' });
    const account = (await ok(['accounts', 'create', '--credits', '100'], env)).id as string;
    const started = Date.now();
    const monitors: Record<string, any>[] = [];
    for (let i = 0; i < 6; i++) {
      const start = new Date(started - 3 * WEEK_MS - i * HOUR_MS).toISOString();
      monitors.push(
        await ok(['monitors', 'create', '--account', account, '--name', `m${i}`, '--type', 'company', '--frequency', 'weekly', '--start', start, '--target', `Acme ${i} Inc`], env),
      );
    }
    expect(monitors.every((m) => Date.parse(m.next_run_at) < started - 3 * WEEK_MS + 1)).toBe(true);

    const workers = [spawnCli(['worker'], env), spawnCli(['worker'], env)];
    const runsOf = async (id: string) => (await ok(['monitors', 'runs', id, '--account', account], env)).runs as Record<string, any>[];
    const allRan = await waitFor(async () => {
      for (const m of monitors) if (!(await runsOf(m.id)).some((r) => r.status === 'completed')) return false;
      return true;
    }, 60_000, 250);
    // A few more ticks of both, so that a second run for a period would have been made by now.
    await new Promise((resolve) => setTimeout(resolve, 500));
    for (const w of workers) w.child.kill('SIGTERM');
    for (const w of workers) expect(await exitWithin(w.child, 15_000), w.stderr()).toBe(0);
    expect(allRan, workers.map((w) => w.stderr()).join('\n')).toBe(true);

    for (const [i, m] of monitors.entries()) {
      const runs = await runsOf(m.id);
      // Periods start every week from the start: the latest one at or before now is three weeks on.
      const latest = Date.parse(m.next_run_at) + 3 * WEEK_MS;
      expect(runs, `monitor m${i}`).toEqual([expect.objectContaining({ trigger: 'schedule', status: 'completed', period_start: new Date(latest).toISOString() })]);
      const after = await ok(['monitors', 'show', m.id, '--account', account], env);
      expect(Date.parse(after.next_run_at)).toBe(latest + WEEK_MS);
      expect(Date.parse(after.next_run_at)).toBeGreaterThan(Date.now());
    }
  });
});
