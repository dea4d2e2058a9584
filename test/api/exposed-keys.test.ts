import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

const URL = '/api/lookup/breaches/exposed-keys';
// Made-up credentials in the shapes of real ones (none was ever issued).
const GITHUB = 'ghp_' + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx';
const SLACK = 'xoxb-' + '263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1';
// Stripe's API reference prints this test key: a vendor example, a likely false positive.
const STRIPE_EXAMPLE = 'sk_test_4eC39HqLyjWDarjtT1zdp7dc';
const STRIPE = 'sk_live_' + '51HqLyjWDarjtT1zdp7dc9Xq2Lm4Np8Rt';
const CONTENT = [
  '# deploy settings',
  `const token = "${GITHUB}";`,
  `SLACK_BOT=${SLACK}`,
  `stripe_docs_key = "${STRIPE_EXAMPLE}"`,
  `stripe.api_key = "${STRIPE}"`,
  '',
].join('\n');
const SECRETS = [GITHUB, SLACK, STRIPE];

const post = (h: ApiHarness, key: string, payload: Record<string, unknown>) => h.app.inject({ method: 'POST', url: URL, headers: bearer(key), payload });

afterEach(closeHarnesses);

describe.each(TEST_STORES)('POST /api/lookup/breaches/exposed-keys on %s', (store) => {
  it('answers every field of spec 4.6, masks every secret, charges 1 credit, and records the source in the activity history', async () => {
    const h = await openStoreHarness(store);
    const { id, key } = await newAccount(h, { credits: 5 });
    const res = await post(h, key, { content: CONTENT, source: 'ci: deploy.env' });
    expect(res.statusCode, res.body).toBe(200);
    for (const secret of SECRETS) expect(res.body).not.toContain(secret);
    const body = json(res);
    expect(Object.keys(body).sort()).toEqual(['message', 'result', 'success']);
    expect(body.success).toBe(true);
    const r = body.result;
    expect(Object.keys(r).sort()).toEqual(
      ['charged', 'commit_sha', 'config', 'credits', 'depth', 'findings', 'kind', 'repository_id', 'reused', 'scan_id', 'status', 'summary', 'target', 'type'].sort(),
    );
    expect(r).toMatchObject({ kind: 'exposed_keys', target: 'ci: deploy.env', type: 0, repository_id: null, commit_sha: null, depth: null, reused: false, charged: true, credits: 1, status: 'completed' });
    expect(r.scan_id).toMatch(/^scan_[0-9a-f-]{36}$/);
    expect(r.config).toEqual({ rules: null, min_severity: 'low', baseline_fingerprints: [], include_likely_false_positives: false, max_findings: null, validate: false });
    expect(r.summary).toMatchObject({ total: 3, engines_run: ['gitleaks'], deep_scan: false, suppressed: 1, validated: 0, live: 0, truncated: false, by_engine: { gitleaks: 3, secretlint: 0 } });
    expect(r.summary.rules_requested).toBeGreaterThan(200);
    expect(r.summary.by_severity).toEqual({ critical: 2, high: 1, medium: 0, low: 0 });
    expect(typeof r.summary.duration_ms).toBe('number');
    const byRule = Object.fromEntries(r.findings.map((f: { rule_id: string }) => [f.rule_id, f]));
    expect(Object.keys(byRule).sort()).toEqual(['github-pat', 'slack-bot-token', 'stripe-access-token']);
    expect(byRule['github-pat']).toEqual({
      fingerprint: expect.stringMatching(/^[0-9a-f]{32}$/),
      rule_id: 'github-pat',
      description: expect.stringContaining('GitHub Personal Access Token'),
      severity: 'critical',
      severity_source: 'sluice_table',
      engines: ['gitleaks'],
      file: null,
      start_line: 2,
      end_line: 2,
      column: 16,
      preview: 'ghp_********Ux',
      entropy: expect.any(Number),
      commit: null,
      author: null,
      email: null,
      date: null,
      likely_false_positive: false,
      likely_false_positive_reason: null,
      validation: { status: 'not_checked', confidence: null, checked_at: null },
    });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(4);

    const audit = json(await h.app.inject({ method: 'GET', url: '/api/account/audit', headers: bearer(key) }));
    expect(audit.entries[0]).toMatchObject({ action: 'scan.exposed_keys', target_id: r.scan_id, label: 'ci: deploy.env' });

    if (store === 'sqlite') {
      // Nothing of what was found is stored: not in the database file nor in its write-ahead log.
      const dir = h.engine.config.dataDir;
      const files = fs.readdirSync(dir).filter((f) => f.startsWith('sluice.db'));
      const bytes = Buffer.concat(files.map((f) => fs.readFileSync(path.join(dir, f))));
      for (const secret of SECRETS) expect(bytes.includes(Buffer.from(secret))).toBe(false);
    }
  });

  it('the same content again within the window is reused and free; nothing found is free even on an empty balance', async () => {
    const h = await openStoreHarness(store);
    const { id, key } = await newAccount(h, { credits: 1 });
    expect(json(await post(h, key, { content: CONTENT })).result).toMatchObject({ credits: 1, charged: true, reused: false, target: 'content' });
    const again = json(await post(h, key, { content: CONTENT, type: 2 })).result;
    expect(again).toMatchObject({ credits: 0, charged: false, reused: true });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);
    const clean = json(await post(h, key, { content: 'nothing secret here\n' }));
    expect(clean.result).toMatchObject({ credits: 0, charged: false, reused: false, findings: [], summary: expect.objectContaining({ total: 0 }) });
    expect(clean.message).toBe('No exposed credentials found');
    const other = await post(h, key, { content: `new: ${GITHUB.slice(0, -1)}Q\n` });
    expect(other.statusCode).toBe(402);
    expect(json(other).code).toBe('insufficient_credits');
  });

  it('refuses content over 256 KB with content_too_large and charges nothing', async () => {
    const h = await openStoreHarness(store);
    const { id, key } = await newAccount(h, { credits: 5 });
    const big = `${GITHUB}\n${'x'.repeat(256 * 1024)}`;
    const res = await post(h, key, { content: big });
    expect(res.statusCode).toBe(413);
    expect(json(res).code).toBe('content_too_large');
    const exact = await post(h, key, { content: 'y'.repeat(256 * 1024) });
    expect(exact.statusCode, exact.body).toBe(200);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(5);
  });

  it('config: rules, min_severity, max_findings with truncated, likely false positives on request, baselines that survive moved lines', async () => {
    const h = await openStoreHarness(store);
    const { key } = await newAccount(h, { credits: 50 });
    const only = json(await post(h, key, { content: CONTENT, config: { rules: ['slack-bot-token'] } })).result;
    expect(only.findings.map((f: { rule_id: string }) => f.rule_id)).toEqual(['slack-bot-token']);
    expect(only.summary.rules_requested).toBe(1);

    const high = json(await post(h, key, { content: CONTENT, config: { min_severity: 'critical' } })).result;
    expect(high.findings.map((f: { severity: string }) => f.severity)).toEqual(['critical', 'critical']);

    const capped = json(await post(h, key, { content: CONTENT, config: { max_findings: 1 } })).result;
    expect(capped.findings).toHaveLength(1);
    expect(capped.summary).toMatchObject({ total: 3, truncated: true });

    const withFp = json(await post(h, key, { content: CONTENT, config: { include_likely_false_positives: true } })).result;
    const example = withFp.findings.find((f: { start_line: number }) => f.start_line === 4);
    expect(example).toMatchObject({ rule_id: 'stripe-access-token', likely_false_positive: true, likely_false_positive_reason: 'vendor_example', preview: 'sk_t********dc' });
    expect(withFp.summary).toMatchObject({ total: 4, suppressed: 0 });

    const github = withFp.findings.find((f: { rule_id: string }) => f.rule_id === 'github-pat');
    const moved = `// a header\n// another line\n\n${CONTENT}`;
    const again = json(await post(h, key, { content: moved, config: { include_likely_false_positives: true } })).result;
    const movedGithub = again.findings.find((f: { rule_id: string }) => f.rule_id === 'github-pat');
    expect(movedGithub.start_line).toBe(github.start_line + 3);
    expect(movedGithub.fingerprint).toBe(github.fingerprint);
    const baselined = json(await post(h, key, { content: moved, config: { baseline_fingerprints: [github.fingerprint] } })).result;
    expect(baselined.findings.map((f: { rule_id: string }) => f.rule_id)).not.toContain('github-pat');
    expect(baselined.summary).toMatchObject({ total: 2, suppressed: 2 });

    const unknown = await post(h, key, { content: CONTENT, config: { rules: ['no-such-rule'] } });
    expect(unknown.statusCode).toBe(422);
    expect(json(unknown).code).toBe('unknown_rule');
    const badType = await post(h, key, { content: CONTENT, type: 3 });
    expect(badType.statusCode).toBe(422);
  });

  it('type 1 runs secretlint; type 2 runs both and merges what both found into one finding', async () => {
    const h = await openStoreHarness(store);
    const { key } = await newAccount(h, { credits: 50 });
    const alt = json(await post(h, key, { content: CONTENT, type: 1 })).result;
    expect(alt.summary.engines_run).toEqual(['secretlint']);
    expect(alt.findings.map((f: { rule_id: string }) => f.rule_id).sort()).toEqual(['secretlint/github', 'secretlint/slack']);
    expect(alt.findings.every((f: { engines: string[] }) => f.engines.join() === 'secretlint')).toBe(true);

    const both = json(await post(h, key, { content: CONTENT, type: 2 })).result;
    expect(both.summary.engines_run).toEqual(['gitleaks', 'secretlint']);
    const github = both.findings.filter((f: { preview: string }) => f.preview.startsWith('ghp_'));
    expect(github).toHaveLength(1);
    expect(github[0]).toMatchObject({ rule_id: 'github-pat', engines: ['gitleaks', 'secretlint'] });
    expect(both.summary.total).toBe(3);
    expect(both.summary.by_engine).toEqual({ gitleaks: 3, secretlint: 2 });
    // The merged finding keeps the standard engine's fingerprint, so a type 0 baseline holds for type 2.
    const standard = json(await post(h, key, { content: CONTENT })).result;
    expect(github[0].fingerprint).toBe(standard.findings.find((f: { rule_id: string }) => f.rule_id === 'github-pat').fingerprint);
  });
});
