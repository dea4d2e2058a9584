import { afterEach, describe, expect, it } from 'vitest';
import { driveRepoScans, runRepoScan, type RepoScanDeps } from '../../src/jobs/repo-scan-job.js';
import { chargeLedgerId } from '../../src/storage/ledger-ids.js';
import { gitRepo, startGitHttpServer } from '../support/git-http-server.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { tempDir, TEST_STORES } from '../support/test-engine.js';
import { waitFor } from '../support/child-worker.js';

const GITHUB = 'ghp_' + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx';
const SLACK = 'xoxb-' + '263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1';
const STRIPE = 'sk_live_' + '51HqLyjWDarjtT1zdp7dc9Xq2Lm4Np8Rt';
const BASE = '/api/lookup/breaches/github';

const closers: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await closeHarnesses();
});

/** A repository whose history holds a token added then deleted, one on another branch, and one in a fixture. */
async function plantedRepository() {
  const root = tempDir('sluice-git-root-');
  const repo = gitRepo(tempDir('sluice-git-work-'));
  const commits = {
    readme: repo.commit({ 'README.md': '# app\n' }, 'start'),
    added: repo.commit({ 'src/config.js': `// settings\nconst a = 1;\nconst token = "${GITHUB}";\n` }, 'add config', { name: 'Eve Leaky', email: 'eve@example.com' }),
    deleted: repo.commit({ 'src/config.js': '// settings\nconst a = 1;\n' }, 'remove the token'),
    fixture: repo.commit({ 'test/fixtures/keys.txt': `stripe_key = "${STRIPE}"\n` }, 'fixture'),
  };
  repo.git(['checkout', '--quiet', '-b', 'feature']);
  const branch = repo.commit({ '.env': `A=1\nSLACK_BOT=${SLACK}\n` }, 'env on a branch');
  repo.publish(root, 'app.git');
  const clean = gitRepo(tempDir('sluice-git-clean-'));
  clean.commit({ 'README.md': 'nothing here\n' }, 'clean');
  clean.publish(root, 'clean.git');
  const server = await startGitHttpServer(root);
  closers.push(server.close);
  return { server, commits: { ...commits, branch } };
}

async function harness(store: (typeof TEST_STORES)[number]): Promise<ApiHarness> {
  return openStoreHarness(store, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
}

async function settle(h: ApiHarness, key: string, id: string): Promise<Record<string, any>> {
  let body: Record<string, any> = {};
  await waitFor(async () => {
    body = json(await h.app.inject({ method: 'GET', url: `${BASE}/${id}`, headers: bearer(key) }));
    return body.result?.status !== 'processing';
  }, 60_000, 50);
  return body;
}

function drive(deps: RepoScanDeps, owner = 'test-worker'): void {
  const stop = driveRepoScans(deps, owner, 20);
  closers.push(stop);
}

describe.each(TEST_STORES)('code-host leak scan on %s', (store) => {
  it('202 processing with an id, then every commit of every branch through both engines, with commit, author, email, date, file and line', async () => {
    const { server, commits } = await plantedRepository();
    const h = await harness(store);
    const { id: accountId, key } = await newAccount(h, { credits: 3 });
    const started = await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: server.url('app.git') } });
    expect(started.statusCode, started.body).toBe(202);
    const first = json(started);
    expect(first).toMatchObject({ success: true, result: { status: 'processing', kind: 'repository', target: server.url('app.git'), findings: [], credits: 0 } });
    const scanId = first.result.scan_id as string;
    expect(scanId).toMatch(/^rscan_/);

    drive(h.deps.repoScans!);
    const done = await settle(h, key, scanId);
    expect(done.success).toBe(true);
    const r = done.result;
    expect(r).toMatchObject({ status: 'completed', type: 2, repository_id: server.url('app.git'), commit_sha: commits.branch, depth: 5, charged: true, credits: 1, reused: false, error_code: null });
    expect(r.summary).toMatchObject({ deep_scan: true, engines_run: ['gitleaks', 'secretlint'], total: 2, suppressed: 1 });
    for (const secret of [GITHUB, SLACK, STRIPE]) expect(JSON.stringify(done)).not.toContain(secret);
    const github = r.findings.find((f: { rule_id: string }) => f.rule_id === 'github-pat');
    // Deleted in the next commit, still found in the one that added it.
    expect(github).toMatchObject({
      file: 'src/config.js',
      start_line: 3,
      end_line: 3,
      commit: commits.added,
      author: 'Eve Leaky',
      email: 'eve@example.com',
      date: '2026-01-02T10:00:00+00:00',
      engines: ['gitleaks', 'secretlint'],
      preview: 'ghp_********Ux',
    });
    expect(r.findings.find((f: { rule_id: string }) => f.rule_id === 'slack-bot-token')).toMatchObject({ file: '.env', start_line: 2, commit: commits.branch });
    expect((await h.engine.deps.billing.requireAccount(accountId)).credits).toBe(2);

    // The fixture's key is a likely false positive (test path): shown only when asked for.
    const withFp = json(await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: server.url('app.git'), config: { include_likely_false_positives: true } } }));
    const all = (await settle(h, key, withFp.result.scan_id)).result;
    expect(all.findings.find((f: { file: string }) => f.file === 'test/fixtures/keys.txt')).toMatchObject({ likely_false_positive: true, likely_false_positive_reason: 'test_path', commit: commits.fixture });
  });

  it('a repository with nothing to find is free; another account cannot read the scan', async () => {
    const { server } = await plantedRepository();
    const h = await harness(store);
    const { id: accountId, key } = await newAccount(h, { credits: 0 });
    const started = json(await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: server.url('clean.git') } }));
    drive(h.deps.repoScans!);
    const done = await settle(h, key, started.result.scan_id);
    expect(done.result).toMatchObject({ status: 'completed', findings: [], credits: 0, charged: false, depth: 1 });
    expect((await h.engine.deps.billing.requireAccount(accountId)).credits).toBe(0);
    const other = await newAccount(h);
    const peek = await h.app.inject({ method: 'GET', url: `${BASE}/${started.result.scan_id}`, headers: bearer(other.key) });
    expect(peek.statusCode).toBe(404);
    expect(json(peek).code).toBe('scan_not_found');
  });

  it('a worker that dies mid-scan loses its lease; the next one finishes with the same findings, and a crash after the charge never charges twice', async () => {
    const { server } = await plantedRepository();
    const h = await harness(store);
    const { id: accountId, key } = await newAccount(h, { credits: 5 });
    const deps = h.deps.repoScans!;
    const started = json(await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: server.url('app.git') } }));
    const scanId = started.result.scan_id as string;
    // The first worker claims the scan and dies before doing anything (kill -9: no finish, no release).
    const dead = await deps.scans.claim('dead-worker', deps.clock.now(), deps.leaseMs);
    expect(dead?.scan.id).toBe(scanId);
    expect(await deps.scans.claim('other', deps.clock.now(), deps.leaseMs)).toBeUndefined();

    // The second dies after charging, before recording the end.
    const later = { now: () => Date.now() + deps.leaseMs + 1_000 };
    let crashed = false;
    const crashing: RepoScanDeps = {
      ...deps,
      clock: later,
      scans: {
        ...deps.scans,
        claim: deps.scans.claim.bind(deps.scans),
        renew: deps.scans.renew.bind(deps.scans),
        create: deps.scans.create.bind(deps.scans),
        get: deps.scans.get.bind(deps.scans),
        finish: async () => {
          crashed = true;
          throw new Error('killed');
        },
      },
    };
    const second = await crashing.scans.claim('second', later.now(), deps.leaseMs);
    expect(second?.scan.id).toBe(scanId);
    await runRepoScan(crashing, second!.scan, second!.lease).catch(() => undefined);
    expect(crashed).toBe(true);
    expect((await h.engine.deps.billing.requireAccount(accountId)).credits).toBe(4);

    // The third, after that lease ran out too, finishes: same findings, no second charge.
    const third = { now: () => Date.now() + 2 * deps.leaseMs + 2_000 };
    drive({ ...deps, clock: third }, 'third');
    const done = await settle(h, key, scanId);
    expect(done.result).toMatchObject({ status: 'completed', credits: 1, charged: true, summary: expect.objectContaining({ total: 2 }) });
    expect(done.result.findings.map((f: { rule_id: string }) => f.rule_id).sort()).toEqual(['github-pat', 'slack-bot-token']);
    expect((await h.engine.deps.billing.requireAccount(accountId)).credits).toBe(4);
    const charges = (await h.engine.deps.billing.ledger(accountId)).filter((e) => e.id === chargeLedgerId(accountId, 'call', `repo-scan:${scanId}`));
    expect(charges).toHaveLength(1);
  });

  it('only public https addresses unless the private-address setting is on', async () => {
    const h = await openStoreHarness(store);
    const { key } = await newAccount(h);
    const plain = await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: 'http://127.0.0.1:9/app.git' } });
    expect(plain.statusCode).toBe(422);
    expect(json(plain).code).toBe('invalid_repository');
    const loop = await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: 'https://127.0.0.1:9/app.git' } });
    expect(loop.statusCode).toBe(422);
    expect(json(loop).code).toBe('blocked_address');
    const creds = await h.app.inject({ method: 'POST', url: BASE, headers: bearer(key), payload: { url: 'https://user:pw@example.com/app.git' } });
    expect(json(creds).code).toBe('invalid_repository');
  });
});

