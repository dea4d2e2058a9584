import { afterEach, describe, expect, it } from 'vitest';
import { JOB_STATUSES } from '../../src/storage/job-states.js';
import { WEBHOOK_KINDS } from '../../src/webhooks/webhook-store.js';
import { cliEnv, killChildren, queueJob, removeScratchDirs, scratchDir, spawnCli, workerReady } from '../support/cli-process.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { engineScope, SMALL_JOBS, TEST_STORES, type TestEngine } from '../support/test-engine.js';
import { startReceiver, verifyDelivery, type Behaviour, type Receiver } from '../support/webhook-receiver.js';

/** Polls an answer that needs the store, until it is true or the time is up; the last answer. */
async function eventually(check: () => Promise<boolean>, timeoutMs: number, everyMs = 50): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return check();
}

// A delivery attempted once across processes that crash is a promise of the store: it must hold on each.
describe.each(TEST_STORES)('webhook delivery across a crash, on %s', (store) => {
  const engines = engineScope(store);
  let receiver: Receiver | undefined;

  afterEach(async () => {
    await killChildren();
    await receiver?.close();
    receiver = undefined;
    // After the workers are gone: on PostgreSQL this drops the database they used.
    await engines.closeAll();
    removeScratchDirs();
  });

  interface Prepared {
    jobId: string;
    secret: string;
    webhookId: string;
    /** The store's settings, for every process of the test. */
    storeEnv: Record<string, string>;
    /** An engine of this process on the same data dir and store, to look at what the workers did. */
    observer: TestEngine;
  }

  /** A queued job and a webhook for its account, made before any worker process starts. */
  async function prepare(dataDir: string, url: string): Promise<Prepared> {
    const storeEnv = await engines.env();
    const input = await writeGenderCsv(dataDir, 'in.csv', { rows: 300 });
    const { jobId, accountId } = await queueJob(dataDir, input, { credits: 1_000, env: { ...SMALL_JOBS, ...storeEnv } });
    const observer = await engines.open({ ...storeEnv, SLUICE_DATA_DIR: dataDir });
    const { webhook, secret } = await observer.webhooks.store.create({
      accountId,
      kind: WEBHOOK_KINDS.generic,
      url,
      events: ['bulk.completed'],
      description: '',
      isActive: true,
      now: Date.now(),
    });
    return { jobId, secret: secret!, webhookId: webhook.id, storeEnv, observer };
  }

  function worker(dataDir: string, caFile: string, env: Record<string, string>) {
    return spawnCli(['worker'], cliEnv(dataDir, { ...SMALL_JOBS, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '1000', NODE_EXTRA_CA_CERTS: caFile, ...env }));
  }

  async function start(behaviour: Behaviour): Promise<Receiver> {
    receiver = await startReceiver({ behaviour });
    return receiver;
  }

  it('an event committed by a process killed before sending it is delivered after restart, once', async () => {
    const r = await start(() => ({ status: 200 }));
    const dataDir = scratchDir();
    const { jobId, secret, storeEnv, observer } = await prepare(dataDir, r.url);
    // This worker finishes the job but has no sender: the event is committed and not sent.
    const first = worker(dataDir, r.caFile, { ...storeEnv, SLUICE_WEBHOOK_SENDER: 'false' });
    await workerReady(first);
    expect(await eventually(async () => (await observer.deps.jobs.status(jobId)) === JOB_STATUSES.completed, 30_000)).toBe(true);
    first.child.kill('SIGKILL');
    expect(r.requests).toHaveLength(0);

    const second = worker(dataDir, r.caFile, storeEnv);
    await workerReady(second);
    const [request] = await r.waitFor(1, 20_000);
    expect(verifyDelivery(request!, secret)).toEqual([]);
    expect((request!.json as { data: { id: string } }).data.id).toBe(jobId);
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(r.messageIds()).toHaveLength(1);
    expect(r.requests).toHaveLength(1);
  });

  it('a sender killed during an attempt leaves the delivery to the next process, which sends it with the same webhook-id', async () => {
    const r = await start((n) => (n === 0 ? { hang: true } : { status: 200 }));
    const dataDir = scratchDir();
    const { jobId, secret, webhookId, storeEnv, observer } = await prepare(dataDir, r.url);
    const first = worker(dataDir, r.caFile, storeEnv);
    await workerReady(first);
    await r.waitFor(1, 30_000);
    first.child.kill('SIGKILL');

    const second = worker(dataDir, r.caFile, storeEnv);
    await workerReady(second);
    // The dead sender's claim outlives one attempt (1 s here) by 5 s; then the next one takes it.
    const requests = await r.waitFor(2, 30_000);
    for (const request of requests) expect(verifyDelivery(request, secret)).toEqual([]);
    expect(r.messageIds()).toHaveLength(1);
    expect((requests[1]!.json as { data: { id: string } }).data.id).toBe(jobId);
    expect(await eventually(async () => (await observer.webhooks.deliveries.list(webhookId, 10))[0]?.status === 'success', 5_000)).toBe(true);
    expect(await observer.webhooks.deliveries.list(webhookId, 10)).toHaveLength(1);
  });
});
