import { afterEach, describe, expect, it } from 'vitest';
import { driveRepoScans } from '../../src/jobs/repo-scan-job.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness } from '../support/api-harness.js';
import { exited, startWorker, waitFor } from '../support/child-worker.js';
import { gitRepo, startGitHttpServer } from '../support/git-http-server.js';
import { storeEnv, tempDir, TEST_STORES } from '../support/test-engine.js';

/**
 * Why a real process: the guarantee is about a worker that dies without a word (kill -9) in the
 * middle of a clone, holding the scan's lease. The test's git server holds the clone open so the
 * kill lands inside it.
 */
const GITHUB = 'ghp_' + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx';
const BASE = '/api/lookup/breaches/github';
const ENV = { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_LEASE_SECONDS: '2', SLUICE_POLL_MS: '20' };

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await closeHarnesses();
});

describe.each(TEST_STORES)('a repository scan whose worker is killed with SIGKILL, on %s', (store) => {
  it('is finished by another worker once the lease runs out: the findings of an uninterrupted scan, charged once', async () => {
    const root = tempDir('sluice-git-root-');
    const repo = gitRepo(tempDir('sluice-git-work-'));
    repo.commit({ 'app.js': `const token = "${GITHUB}";\n` }, 'oops');
    const removed = repo.commit({ 'app.js': 'const token = process.env.TOKEN;\n' }, 'fix');
    repo.publish(root, 'app.git');
    const server = await startGitHttpServer(root);
    closers.push(server.close);

    const { env: storeVars, drop } = await storeEnv(store);
    closers.push(drop);
    const dataDir = tempDir('sluice-kill-');
    const h = await openApiHarness({ ...storeVars, ...ENV, SLUICE_DATA_DIR: dataDir });
    const { id: accountId, key } = await newAccount(h, { credits: 5 });
    const scanId = json(await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: server.url('app.git') } })).result.scan_id;

    server.hold();
    const child = startWorker({ ...storeVars, ...ENV, SLUICE_DATA_DIR: store === 'sqlite' ? dataDir : tempDir('sluice-kill-child-') });
    expect(await waitFor(() => server.requests.length > 0, 30_000, 20)).toBe(true);
    child.kill('SIGKILL');
    await exited(child);
    server.release();

    const started = Date.now();
    closers.push(driveRepoScans(h.deps.repoScans!, 'second-worker', 20));
    let result: Record<string, any> = {};
    expect(
      await waitFor(async () => {
        result = json(await h.app.inject({ method: 'GET', url: `${BASE}/${scanId}`, headers: bearer(key) })).result;
        return result.status !== 'processing';
      }, 60_000, 50),
    ).toBe(true);
    // Not before the dead worker's lease ran out.
    expect(Date.now() - started).toBeGreaterThan(1_000);
    expect(result).toMatchObject({ status: 'completed', depth: 2, commit_sha: removed, credits: 1, charged: true });
    expect(result.findings).toEqual([expect.objectContaining({ rule_id: 'github-pat', file: 'app.js', start_line: 1 })]);
    expect((await h.engine.deps.store.repoScans.get(accountId, scanId))?.attempts).toBe(2);
    expect((await h.engine.deps.billing.requireAccount(accountId)).credits).toBe(4);
  });
});
