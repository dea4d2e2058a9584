import { afterEach, describe, expect, it } from 'vitest';
import { WEBHOOK_KINDS } from '../../src/webhooks/webhook-store.js';
import { cliEnv, DbPeek, killChildren, queueJob, removeScratchDirs, scratchDir, spawnCli, workerReady } from '../support/cli-process.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { openTestEngine, SMALL_JOBS } from '../support/test-engine.js';
import { startReceiver, verifyDelivery, type Behaviour, type Receiver } from '../support/webhook-receiver.js';
import { waitFor } from '../support/child-worker.js';

let receiver: Receiver | undefined;

afterEach(async () => {
  await killChildren();
  await receiver?.close();
  receiver = undefined;
  removeScratchDirs();
});

/** A queued job and a webhook for its account, made before any worker process starts. */
async function prepare(dataDir: string, url: string): Promise<{ jobId: string; secret: string }> {
  const input = await writeGenderCsv(dataDir, 'in.csv', { rows: 300 });
  const { jobId, accountId } = await queueJob(dataDir, input, { credits: 1_000, env: SMALL_JOBS });
  const engine = await openTestEngine({ SLUICE_DATA_DIR: dataDir });
  try {
    const { secret } = engine.webhooks.store.create({ accountId, kind: WEBHOOK_KINDS.generic, url, events: ['bulk.completed'], description: '', isActive: true, now: Date.now() });
    return { jobId, secret: secret! };
  } finally {
    await engine.close();
  }
}

function worker(dataDir: string, caFile: string, extra: Record<string, string> = {}) {
  return spawnCli(['worker'], cliEnv(dataDir, { ...SMALL_JOBS, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '1000', NODE_EXTRA_CA_CERTS: caFile, ...extra }));
}

async function start(behaviour: Behaviour): Promise<Receiver> {
  receiver = await startReceiver({ behaviour });
  return receiver;
}

describe('webhook delivery across a crash', () => {
  it('an event committed by a process killed before sending it is delivered after restart, once', async () => {
    const r = await start(() => ({ status: 200 }));
    const dataDir = scratchDir();
    const { jobId, secret } = await prepare(dataDir, r.url);
    const peek = new DbPeek(dataDir);
    // This worker finishes the job but has no sender: the event is committed and not sent.
    const first = worker(dataDir, r.caFile, { SLUICE_WEBHOOK_SENDER: 'false' });
    await workerReady(first);
    expect(await waitFor(() => peek.job(jobId).status === 'completed', 30_000, 50)).toBe(true);
    first.child.kill('SIGKILL');
    expect(r.requests).toHaveLength(0);

    const second = worker(dataDir, r.caFile);
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
    const { jobId, secret } = await prepare(dataDir, r.url);
    const first = worker(dataDir, r.caFile);
    await workerReady(first);
    await r.waitFor(1, 30_000);
    first.child.kill('SIGKILL');

    const second = worker(dataDir, r.caFile);
    await workerReady(second);
    // The dead sender's claim outlives one attempt (1 s here) by 5 s; then the next one takes it.
    const requests = await r.waitFor(2, 30_000);
    for (const request of requests) expect(verifyDelivery(request, secret)).toEqual([]);
    expect(r.messageIds()).toHaveLength(1);
    expect((requests[1]!.json as { data: { id: string } }).data.id).toBe(jobId);
    const engine = await openTestEngine({ SLUICE_DATA_DIR: dataDir });
    try {
      const hook = engine.webhooks.store.list((engine.deps.jobs.get(jobId)!).accountId, 10, 0).webhooks[0]!;
      expect(await waitFor(() => engine.webhooks.deliveries.list(hook.id, 10)[0]?.status === 'success', 5_000, 50)).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
