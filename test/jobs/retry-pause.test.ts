import fs from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { Worker, MAX_FAILURES } from '../../src/jobs/worker.js';
import { FakeClock } from '../../src/shared/clock.js';
import { AppError, ERROR_CODES } from '../../src/shared/errors.js';
import type { ObjectStore } from '../../src/storage/s3/object-store.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { openTestEngine, type TestEngine } from '../support/test-engine.js';

const engines: TestEngine[] = [];
afterEach(async () => {
  await Promise.all(engines.splice(0).map((e) => e.close()));
});

/** The real store, except that chunk reads fail as a storage outage would while `down` is set. */
function flaky(store: ObjectStore, state: { down: boolean }): ObjectStore {
  return {
    ...store,
    putStream: store.putStream.bind(store),
    putBytes: store.putBytes.bind(store),
    getStream: store.getStream.bind(store),
    head: store.head.bind(store),
    delete: store.delete.bind(store),
    presignGet: store.presignGet.bind(store),
    ping: store.ping.bind(store),
    getBytes: (key, signal) =>
      state.down && key.includes('/chunks/')
        ? Promise.reject(new AppError(ERROR_CODES.storageUnavailable, 'connect ECONNREFUSED', { retryable: true }))
        : store.getBytes(key, signal),
  };
}

describe('a chunk that keeps failing on a retryable error', () => {
  it('backs off, pauses its job after MAX_FAILURES in a row with the error code, and completes after a resume', async () => {
    const clock = new FakeClock();
    const e = await openTestEngine({ SLUICE_CHUNK_ROWS: '1000', SLUICE_BATCH_ROWS: '100' }, clock);
    engines.push(e);
    const input = await writeGenderCsv(e.dataDir, 'in.csv', { rows: 900, seed: 4 });
    const account = await e.deps.billing.createAccount({ credits: 5000, now: clock.now() });
    const job = await e.jobService.submit({ accountId: account.id, type: 'gender', body: fs.createReadStream(input), inputName: null, options: {} });
    const state = { down: true };
    const worker = new Worker({ ...e.deps, objects: flaky(e.deps.objects, state) });

    expect(await worker.tick()).toBe(true); // split
    for (let failure = 1; failure < MAX_FAILURES; failure++) {
      expect(await worker.tick()).toBe(true);
      expect((await e.jobService.get(job.id)).status).toBe('running');
      // Inside the backoff nobody takes the chunk; after it, the next tick does.
      expect(await worker.tick()).toBe(false);
      clock.advance(61_000);
    }
    expect(await worker.tick()).toBe(true);
    expect(await e.jobService.get(job.id)).toMatchObject({ status: 'paused', reason: 'storage_unavailable', creditsUsed: 0 });

    // A resume starts the count afresh: one more failure backs off again instead of pausing.
    await e.jobService.resume(job.id);
    clock.advance(61_000);
    expect(await worker.tick()).toBe(true);
    expect((await e.jobService.get(job.id)).status).toBe('running');

    state.down = false;
    clock.advance(61_000);
    await worker.run({ concurrency: 1, until: async () => (await e.deps.jobs.status(job.id)) !== 'running' });
    expect((await e.jobService.get(job.id)).status).toBe('completed');
  });
});
