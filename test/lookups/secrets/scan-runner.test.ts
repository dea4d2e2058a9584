import { afterEach, describe, expect, it } from 'vitest';
import { GITLEAKS_RULES } from '../../../src/lookups/secrets/rule-set.js';
import { ScanRunner } from '../../../src/lookups/secrets/scan-runner.js';
import type { RuleSet } from '../../../src/lookups/secrets/secret-types.js';
import { isAppError } from '../../../src/shared/errors.js';

const NO_ALLOWLIST = { condition: 'OR', regexTarget: 'secret', regexes: [], stopwords: [], paths: [] } as const;
/** A rule whose pattern backtracks exponentially on a run of `a` that does not end the text. */
const CATASTROPHIC: RuleSet = {
  allowlist: NO_ALLOWLIST,
  rules: [{ id: 'catastrophic', description: 'nested quantifier', regex: { source: '(a+)+$', flags: '' }, secretGroup: 0, entropy: 0, keywords: ['a'], path: null, allowlists: [] }],
};

const runners: ScanRunner[] = [];
afterEach(async () => {
  for (const r of runners.splice(0)) await r.close();
});
function runner(rules: RuleSet, budgetMs: number): ScanRunner {
  const r = new ScanRunner(rules, { threads: 1, budgetMs });
  runners.push(r);
  return r;
}

/** The longest gap between timer ticks while `work` runs: how long the event loop was stalled. */
async function worstStall<T>(work: Promise<T>): Promise<{ result: PromiseSettledResult<T>; stallMs: number }> {
  let last = performance.now();
  let worst = 0;
  const timer = setInterval(() => {
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }, 5);
  const [result] = await Promise.allSettled([work]);
  clearInterval(timer);
  return { result, stallMs: worst };
}

describe('scans run off the event loop within a time budget', () => {
  it('a hostile input that makes a pattern backtrack without end is stopped at the budget, and the event loop never stalls', async () => {
    const r = runner(CATASTROPHIC, 300);
    const started = performance.now();
    const { result, stallMs } = await worstStall(r.scan({ content: `${'a'.repeat(40)}!`, file: null, engines: ['gitleaks'] }));
    const took = performance.now() - started;
    expect(result.status).toBe('rejected');
    const error = (result as PromiseRejectedResult).reason;
    expect(isAppError(error) && error.code).toBe('scan_timeout');
    expect(took).toBeGreaterThanOrEqual(290);
    expect(took).toBeLessThan(3000);
    expect(stallMs).toBeLessThan(100);
    // The runaway thread was ended; the next scan gets a fresh one and answers.
    const next = await r.scan({ content: 'aaaa', file: null, engines: ['gitleaks'] });
    expect(next.map((f) => f.secret)).toEqual(['aaaa']);
  });

  it('the gitleaks rules over 256 KB built to make their open-ended parts backtrack finish within the budget without stalling the loop', async () => {
    const r = runner(GITLEAKS_RULES, 5000);
    // Keywords of many rules, separators and long runs that almost match the generic patterns.
    const unit = 'api_key token secret password auth = "' + 'Ab1-'.repeat(40) + '" curl -u ' + 'x:'.repeat(30) + '\n';
    const content = unit.repeat(Math.floor((256 * 1024) / unit.length));
    const { result, stallMs } = await worstStall(r.scan({ content, file: null, engines: ['gitleaks'] }));
    expect(result.status).toBe('fulfilled');
    expect(stallMs).toBeLessThan(100);
  });

  it('finds a secret with its line, column and entropy, and leaves text without keywords alone', async () => {
    const r = runner(GITLEAKS_RULES, 5000);
    const token = 'ghp_' + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx';
    const found = await r.scan({ content: `first line\n  const t = "${token}";\n`, file: null, engines: ['gitleaks'] });
    const hit = found.find((f) => f.ruleId === 'github-pat');
    expect(hit).toMatchObject({ secret: token, startLine: 2, endLine: 2, column: 14, engine: 'gitleaks' });
    expect(hit!.entropy).toBeGreaterThan(4);
    expect(await r.scan({ content: 'nothing to see here', file: null, engines: ['gitleaks'] })).toEqual([]);
  });

  it('the alternate engine (secretlint) runs on the same thread pool', async () => {
    const r = runner(GITLEAKS_RULES, 10_000);
    const token = 'ghp_' + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx';
    const found = await r.scan({ content: `token: ${token}\n`, file: null, engines: ['secretlint'] });
    expect(found).toEqual([expect.objectContaining({ engine: 'secretlint', ruleId: '@secretlint/secretlint-rule-github', secret: token, startLine: 1, column: 8 })]);
  });
});
