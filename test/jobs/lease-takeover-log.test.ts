import fs from 'node:fs';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { splitJob } from '../../src/jobs/split-job.js';
import { Worker } from '../../src/jobs/worker.js';
import { FakeClock } from '../../src/shared/clock.js';
import { createLogger } from '../../src/shared/logger.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { engineScope, SMALL_JOBS, TEST_STORES, type TestEngine } from '../support/test-engine.js';

/** Another host's worker: never freed as a dead local process, so only its lease running out frees its work. */
const GONE = 'elsewhere:4242:90ne0000';
const LEASE_MS = 30_000;

/** A worker on `e` whose every log line lands in `lines`, parsed. */
function loggedWorker(e: TestEngine): { worker: Worker; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  let partial = '';
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      const parts = (partial + chunk.toString('utf8')).split('\n');
      partial = parts.pop()!;
      for (const line of parts) if (line) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { worker: new Worker({ ...e.deps, log: createLogger('info', sink) }), lines };
}

const takeovers = (lines: Record<string, unknown>[]) => lines.filter((l) => l.msg === 'lease taken over');

describe.each(TEST_STORES)('on %s', (store) => {
  const engines = engineScope(store);
  afterEach(() => engines.closeAll());

  async function queuedJob(clock: FakeClock) {
    const e = await engines.open({ ...SMALL_JOBS, SLUICE_LEASE_SECONDS: String(LEASE_MS / 1000) }, clock);
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 1200, seed: 4, duplicateShare: 0, invalidShare: 0 });
    const account = await e.deps.billing.createAccount({ credits: 10_000, now: clock.now() });
    const job = await e.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: null, options: {} });
    return { e, job, account };
  }

  describe('a lease takeover', () => {
    it("of a chunk whose owner's lease ran out is one info line with the job, account, chunk and both owners", async () => {
      const clock = new FakeClock();
      const { e, job, account } = await queuedJob(clock);
      const phase = (await e.deps.jobs.acquireJobPhase('splitter', clock.now(), LEASE_MS))!;
      await splitJob(e.deps, phase.job, phase.lease, new AbortController().signal);
      const gone = (await e.deps.jobs.acquireChunk(GONE, clock.now(), LEASE_MS))!;
      clock.advance(LEASE_MS + 1);

      const { worker, lines } = loggedWorker(e);
      while (await worker.tick());
      expect((await e.jobService.get(job.id)).status).toBe('completed');
      // Every other chunk and the assembly were free (never leased, or released by the phase before): no line.
      expect(takeovers(lines)).toEqual([
        expect.objectContaining({ level: 30, jobId: job.id, accountId: account.id, chunk: gone.chunk.chunkIndex, previousOwner: GONE, owner: worker.id, leaseEpoch: gone.lease.epoch + 1 }),
      ]);
    });

    it("of a job phase whose owner's lease ran out is one info line with the job, account, phase and both owners", async () => {
      const clock = new FakeClock();
      const { e, job, account } = await queuedJob(clock);
      const gone = (await e.deps.jobs.acquireJobPhase(GONE, clock.now(), LEASE_MS))!;
      clock.advance(LEASE_MS + 1);

      const { worker, lines } = loggedWorker(e);
      while (await worker.tick());
      expect((await e.jobService.get(job.id)).status).toBe('completed');
      expect(takeovers(lines)).toEqual([
        expect.objectContaining({ level: 30, jobId: job.id, accountId: account.id, phase: 'split', previousOwner: GONE, owner: worker.id, leaseEpoch: gone.lease.epoch + 1 }),
      ]);
    });

    it('is not what a claim of released work is: no line', async () => {
      const clock = new FakeClock();
      const { e, job } = await queuedJob(clock);
      const split = (await e.deps.jobs.acquireJobPhase(GONE, clock.now(), LEASE_MS))!;
      await e.deps.jobs.releaseJobLease(job.id, split.lease);
      clock.advance(LEASE_MS + 1);

      const { worker, lines } = loggedWorker(e);
      while (await worker.tick());
      expect((await e.jobService.get(job.id)).status).toBe('completed');
      expect(lines.some((l) => l.msg === 'job started' && l.jobId === job.id)).toBe(true);
      expect(takeovers(lines)).toEqual([]);
    });
  });
});
