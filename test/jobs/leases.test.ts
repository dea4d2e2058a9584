import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { processChunk } from '../../src/jobs/process-chunk.js';
import { splitJob } from '../../src/jobs/split-job.js';
import { Worker } from '../../src/jobs/worker.js';
import { FakeClock } from '../../src/shared/clock.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { engineScope, SMALL_JOBS, TEST_STORES } from '../support/test-engine.js';

describe.each(TEST_STORES)('on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  async function splitOneJob(clock: FakeClock, env: Record<string, string> = {}, rows = 1200) {
    const e = await engines.open({ ...env, SLUICE_LEASE_SECONDS: '30' }, clock);
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows, seed: 9, duplicateShare: 0, invalidShare: 0 });
    const account = await e.deps.billing.createAccount({ credits: 10_000, now: clock.now() });
    const job = await e.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: null, options: {} });
    const phase = (await e.deps.jobs.acquireJobPhase('splitter', clock.now(), 30_000))!;
    await splitJob(e.deps, phase.job, phase.lease, new AbortController().signal);
    return { e, job, account };
  }

  describe('chunk leases', () => {
    it('refuse the late commit of a worker that lost its lease, so nothing is written or charged twice', async () => {
      const clock = new FakeClock();
      const { e, job, account } = await splitOneJob(clock);

      const stale = (await e.deps.jobs.acquireChunk('worker-a', clock.now(), 30_000))!;
      clock.advance(31_000);
      const fresh = (await e.deps.jobs.acquireChunk('worker-b', clock.now(), 30_000))!;
      expect(fresh.chunk.chunkIndex).toBe(stale.chunk.chunkIndex);
      expect(fresh.lease.epoch).toBe(stale.lease.epoch + 1);

      const never = new AbortController().signal;
      await expect(() => processChunk(e.deps, stale.chunk, stale.lease, never, never)).rejects.toMatchObject({ code: 'lease_lost' });
      expect(await e.deps.billing.chargeCountForJob(job.id)).toBe(0);
      expect((await e.deps.jobs.chunk(job.id, stale.chunk.chunkIndex))!.cursor).toBe(0);
      expect((await e.deps.billing.requireAccount(account.id)).credits).toBe(10_000);

      expect(await processChunk(e.deps, fresh.chunk, fresh.lease, never, never)).toBe('done');
      expect(await e.deps.billing.chargeCountForJob(job.id)).toBe(fresh.chunk.rowCount);
    });

    it('held by a worker process on this machine that has died are freed at once; a live one\'s and another host\'s are not', async () => {
      const clock = new FakeClock();
      const { e, job } = await splitOneJob(clock, SMALL_JOBS, 1600);

      const exited = spawn(process.execPath, ['-e', '']);
      const deadPid = exited.pid!;
      await new Promise((resolve) => exited.on('exit', resolve));
      const host = os.hostname();
      const dead = (await e.deps.jobs.acquireChunk(`${host}:${deadPid}:0dead000`, clock.now(), 30_000))!;
      const live = (await e.deps.jobs.acquireChunk(`${host}:${process.ppid}:11ve0000`, clock.now(), 30_000))!;
      const far = (await e.deps.jobs.acquireChunk(`elsewhere:${deadPid}:0far0000`, clock.now(), 30_000))!;

      // The clock stands still: no lease runs out, so only a freed one can be taken.
      const worker = new Worker(e.deps);
      while (await worker.tick());
      const status = async (c: { chunk: { chunkIndex: number } }) => (await e.deps.jobs.chunk(job.id, c.chunk.chunkIndex))!.status;
      expect(await status(dead)).toBe('done');
      expect([await status(live), await status(far)]).not.toContain('done');
      expect((await e.deps.jobs.chunks(job.id)).filter((c) => c.status === 'done')).toHaveLength(2);
      // The dead owner's lease is gone for good: its epoch moved on, so a late commit of it would be refused.
      expect((await e.deps.jobs.chunk(job.id, dead.chunk.chunkIndex))!.leaseEpoch).toBe(dead.lease.epoch + 1);
      expect(await e.deps.jobs.renewChunkLease(job.id, live.chunk.chunkIndex, live.lease, clock.now() + 30_000)).toBe(true);
    });

    it('are not handed out twice while they are live', async () => {
      const clock = new FakeClock();
      const { e } = await splitOneJob(clock);
      const first = (await e.deps.jobs.acquireChunk('a', clock.now(), 30_000))!;
      const second = (await e.deps.jobs.acquireChunk('b', clock.now(), 30_000))!;
      expect(second.chunk.chunkIndex).not.toBe(first.chunk.chunkIndex);
      clock.advance(29_000);
      expect(await e.deps.jobs.renewChunkLease(first.chunk.jobId, first.chunk.chunkIndex, first.lease, clock.now() + 30_000)).toBe(true);
      clock.advance(29_000);
      const third = await e.deps.jobs.acquireChunk('c', clock.now(), 30_000);
      expect(third?.chunk.chunkIndex).not.toBe(first.chunk.chunkIndex);
    });
  });

  describe('the repeat-free window', () => {
    it('makes a repeat free inside the window and charges it again once the window has passed', async () => {
      const clock = new FakeClock();
      const e = await engines.open({ SLUICE_REPEAT_FREE_DAYS: '180' }, clock);
      const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 300, seed: 2, duplicateShare: 0, invalidShare: 0 });
      const account = await e.deps.billing.createAccount({ credits: 10_000, now: clock.now() });
      const runOnce = async () => {
        const job = await e.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: null, options: {} });
        await new Worker(e.deps).run({ concurrency: 1, until: async () => (await e.deps.jobs.status(job.id)) === 'completed' });
        return (await e.jobService.get(job.id)).creditsUsed;
      };

      const first = await runOnce();
      clock.advance(179 * 86_400_000);
      const inside = await runOnce();
      clock.advance(2 * 86_400_000);
      const after = await runOnce();

      expect(first).toBe(300);
      expect(inside).toBe(0);
      expect(after).toBe(300);
    });
  });

  describe('ending a job', () => {
    it('changes nothing when another process has ended it first, instead of throwing', async () => {
      const clock = new FakeClock();
      const { e, job } = await splitOneJob(clock);
      await e.jobService.cancel(job.id);
      const now = clock.now();
      expect(await e.deps.jobs.transitionFrom('running', job.id, 'failed', { reason: 'internal', now })).toBeUndefined();
      expect((await e.jobService.get(job.id)).status).toBe('cancelled');
      await expect(() => e.deps.jobs.transition(job.id, 'failed', { reason: 'internal', now })).rejects.toThrow(/cannot become failed/);
    });
  });
});
