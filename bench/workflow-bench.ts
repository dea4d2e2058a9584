// Workflow engine bench (issue #34), on an embedded SQLite store in a temp dir with the embedded
// gender engine (no network):
//   - runs/s end to end for a 1-step (email lookup) and a 5-step workflow (lookup, condition,
//     transform, delay of 1 s, webhook), each run queued and driven by one driver in this process;
//   - engine overhead per step at p50/p99: from the end of the claim (or the step before) to the
//     end of the step's commit, the embedded lookup answering from memory;
//   - store transactions per step: claims and commits (and renewals) counted over steps executed;
//   - wake-up lateness at p99 with N runs asleep (default 10,000, sleeping an hour): probe runs
//     with a 1 s delay, lateness = when the driver claimed the woken run minus its wake time.
//   npm run build && node dist/bench/workflow-bench.js [--runs 2000] [--sleepers 10000] [--probes 200] [--poll-ms 20]
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { jobEndEvent, jobPausedEvent } from '../src/jobs/job-events.js';
import { EmbeddedGenderEngine } from '../src/lookups/gender/embedded-gender-engine.js';
import { Limiters } from '../src/lookups/limiters.js';
import { systemClock } from '../src/shared/clock.js';
import { silentLogger } from '../src/shared/logger.js';
import { openSqliteStore } from '../src/storage/sqlite/sqlite-store.js';
import type { Store } from '../src/storage/store.js';
import { validateDefinition } from '../src/workflows/definition.js';
import { driveWorkflowRuns, WorkflowRunDriver, type RunDriverDeps } from '../src/workflows/run-driver.js';

const { values } = parseArgs({
  options: {
    runs: { type: 'string', default: '2000' },
    sleepers: { type: 'string', default: '10000' },
    probes: { type: 'string', default: '200' },
    'poll-ms': { type: 'string', default: '20' },
  },
});
const RUNS = Number(values.runs);
const SLEEPERS = Number(values.sleepers);
const PROBES = Number(values.probes);
const POLL_MS = Number(values['poll-ms']);
const ACCOUNT = 'acc_bench';
const NAMES = ['maria', 'john', 'anna', 'peter', 'laura', 'mike', 'sofia', 'lucas'];

function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!;
}

/** The store with its claims, commits and renewals counted, and each step's time from the end of the claim or step before. */
function instrumented(store: Store) {
  const counts = { claims: 0, emptyClaims: 0, commits: 0, renewals: 0, steps: 0 };
  const stepMs: number[] = [];
  const lastEnd = new Map<string, number>();
  const claimedAt = new Map<string, number[]>();
  const real = store.workflows;
  const workflows = Object.assign(Object.create(real) as typeof real, {
    async claimRun(owner: string, now: number, leaseMs: number) {
      const claim = await real.claimRun(owner, now, leaseMs);
      counts.claims += 1;
      if (!claim) counts.emptyClaims += 1;
      else {
        lastEnd.set(claim.run.id, performance.now());
        const seen = claimedAt.get(claim.run.id) ?? [];
        seen.push(Date.now());
        claimedAt.set(claim.run.id, seen);
      }
      return claim;
    },
    async commitStep(c: Parameters<typeof real.commitStep>[0]) {
      const result = await real.commitStep(c);
      counts.commits += 1;
      const end = performance.now();
      if (result === 'committed' && c.next.cursor !== c.cursor) {
        counts.steps += 1;
        stepMs.push(end - (lastEnd.get(c.runId) ?? end));
      }
      lastEnd.set(c.runId, end);
      return result;
    },
    async renewLease(...args: Parameters<typeof real.renewLease>) {
      counts.renewals += 1;
      return real.renewLease(...args);
    },
  });
  return { store: { ...store, workflows } as Store, counts, stepMs, claimedAt };
}

async function createWorkflow(store: Store, id: string, steps: unknown[]): Promise<void> {
  const def = validateDefinition({ name: id, steps });
  await store.workflows.create({ id, accountId: ACCOUNT, name: def.name, description: '', status: 'active', trigger: JSON.stringify(def.trigger), steps: JSON.stringify(def.steps), nextRunAt: null, now: Date.now() });
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-workflow-bench-'));
  const store = openSqliteStore(path.join(dir, 'sluice.db'), { synchronous: 'NORMAL', busyTimeoutMs: 5000 }, { jobEnded: jobEndEvent, jobPaused: jobPausedEvent });
  try {
    await store.billing.createAccount({ id: ACCOUNT, credits: 10_000_000, now: Date.now() });
    await store.webhooks.insert({
      id: 'wh_bench', accountId: ACCOUNT, kind: 'generic', url: 'https://hooks.example.com/in', events: ['lookup.completed'], description: '', isActive: true,
      secretSealed: 'sealed', telegramChat: null, telegramTokenSealed: null, now: Date.now(),
    });
    const lookup = { id: 'lookup1', type: 'email_lookup', config: { input: { var: 'input.email' } } };
    await createWorkflow(store, 'one', [lookup]);
    await createWorkflow(store, 'five', [
      lookup,
      { id: 'known', type: 'condition', config: { expression: { '!=': [{ var: 'steps.lookup1.output.gender' }, 'unknown'] }, on_false: 'shape' } },
      { id: 'shape', type: 'transform', config: { expression: { object: { who: { var: 'input.email' }, gender: { var: 'steps.lookup1.output.gender' } } } } },
      { id: 'wait', type: 'delay', config: { seconds: 1 } },
      { id: 'notify', type: 'webhook', config: { webhook_id: 'wh_bench', body: { var: 'steps.shape.output' } } },
    ]);
    await createWorkflow(store, 'sleep_long', [{ id: 'wait', type: 'delay', config: { seconds: 3600 } }]);
    await createWorkflow(store, 'sleep_short', [{ id: 'wait', type: 'delay', config: { seconds: 1 } }]);

    const probe = instrumented(store);
    const deps: RunDriverDeps = {
      store: probe.store,
      providers: new Map([['gender', new EmbeddedGenderEngine()]]),
      limiters: new Limiters({ accountConcurrency: 64, providerConcurrency: 64 }),
      clock: systemClock,
      log: silentLogger(),
      leaseMs: 60_000,
      repeatFreeDays: 180,
    };
    const lines: string[] = [];
    let seq = 0;
    for (const workflowId of ['one', 'five']) {
      for (let i = 0; i < RUNS; i++) {
        await store.workflows.startRun({ id: `run_${workflowId}_${i}`, accountId: ACCOUNT, workflowId, input: JSON.stringify({ email: `${NAMES[i % NAMES.length]}.${seq++}@example.com` }), maxInFlight: 10_000_000, now: Date.now() });
      }
      Object.assign(probe.counts, { claims: 0, emptyClaims: 0, commits: 0, renewals: 0, steps: 0 });
      probe.stepMs.length = 0;
      const driver = new WorkflowRunDriver(deps, 'bench');
      const began = performance.now();
      // Ticks back to back while runs are due; counts what completed only when none is (a delay pending).
      for (;;) {
        if (await driver.tick()) continue;
        if ((await completedCount(store, workflowId)) === RUNS) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      const seconds = (performance.now() - began) / 1000;
      const sorted = [...probe.stepMs].sort((a, b) => a - b);
      const c = probe.counts;
      lines.push(
        `| ${workflowId === 'one' ? '1 step (lookup)' : '5 steps (lookup, condition, transform, delay 1 s, webhook)'} | ${RUNS} | ${(RUNS / seconds).toFixed(0)} | ${quantile(sorted, 0.5).toFixed(2)} | ${quantile(sorted, 0.99).toFixed(2)} | ${((c.claims - c.emptyClaims + c.commits + c.renewals) / c.steps).toFixed(2)} |`,
      );
    }

    // Sleepers: put to sleep first (each a claim and a wait commit), then probes wake among them.
    for (let i = 0; i < SLEEPERS; i++) {
      await store.workflows.startRun({ id: `sleeper_${i}`, accountId: ACCOUNT, workflowId: 'sleep_long', input: '{}', maxInFlight: 10_000_000, now: Date.now() });
    }
    const sleeper = new WorkflowRunDriver(deps, 'bench');
    const sleepBegan = performance.now();
    while (await sleeper.tick());
    const sleepSeconds = (performance.now() - sleepBegan) / 1000;
    const stop = driveWorkflowRuns(deps, 'bench-poll', POLL_MS);
    const wakeAt = new Map<string, number>();
    for (let i = 0; i < PROBES; i++) {
      const run = await store.workflows.startRun({ id: `probe_${i}`, accountId: ACCOUNT, workflowId: 'sleep_short', input: '{}', maxInFlight: 10_000_000, now: Date.now() });
      wakeAt.set(run.id, -1);
      await new Promise((r) => setTimeout(r, 10));
    }
    for (;;) {
      const { runs } = await store.workflows.runs(ACCOUNT, { limit: PROBES, offset: 0, workflowId: 'sleep_short' });
      if (runs.every((r) => r.status === 'completed')) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    await stop();
    const lateness: number[] = [];
    for (const id of wakeAt.keys()) {
      const claims = probe.claimedAt.get(id) ?? [];
      const run = (await store.workflows.run(ACCOUNT, id))!;
      const waited = JSON.parse(run.outputs) as { wait: { waited_until: string } };
      // The second claim is the one after the wake time.
      lateness.push(claims[claims.length - 1]! - Date.parse(waited.wait.waited_until));
    }
    lateness.sort((a, b) => a - b);
    const load = os.loadavg().map((l) => l.toFixed(2)).join(', ');
    console.log(
      [
        `Workflow bench (bench/workflow-bench.ts), SQLite, embedded gender engine, one driver in one process; ${os.cpus().length} cores, load average ${load}.`,
        '',
        '| Workflow | Runs | Runs/s | Step p50 (ms) | Step p99 (ms) | Store transactions per step |',
        '|---|---|---|---|---|---|',
        ...lines,
        '',
        `Wake-up lateness with ${SLEEPERS} runs asleep (put to sleep at ${(SLEEPERS / sleepSeconds).toFixed(0)} runs/s), ${PROBES} probes with a 1 s delay, poll every ${POLL_MS} ms: p50 ${quantile(lateness, 0.5)} ms, p99 ${quantile(lateness, 0.99)} ms, max ${lateness[lateness.length - 1]} ms.`,
      ].join('\n'),
    );
  } finally {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

async function completedCount(store: Store, workflowId: string): Promise<number> {
  const { runs } = await store.workflows.runs(ACCOUNT, { limit: RUNS, offset: 0, workflowId });
  return runs.filter((r) => r.status === 'completed').length;
}

await main();
