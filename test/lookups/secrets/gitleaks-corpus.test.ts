import { afterAll, describe, expect, it } from 'vitest';
import examples from '../../fixtures/secrets/gitleaks-examples.json' with { type: 'json' };
import gitleaks from '../../../src/lookups/secrets/rules/gitleaks.json' with { type: 'json' };
import { GITLEAKS_RULES, UNSUPPORTED_GITLEAKS_RULES } from '../../../src/lookups/secrets/rule-set.js';
import { ScanRunner } from '../../../src/lookups/secrets/scan-runner.js';

type Examples = Record<string, { positives: string[]; negatives: string[] }>;
const EXAMPLES = examples.rules as Examples;

/**
 * Rules whose generator builds its examples with Go the extractor does not evaluate (loops,
 * helper variables of other types): the rule still compiles and runs, it only has no example here.
 */
const NO_EXTRACTED_EXAMPLES = [
  'dropbox-long-lived-api-token',
  'dropbox-short-lived-api-token',
  'freemius-secret-key',
  'hashicorp-tf-password',
  'jwt-base64',
  'kubernetes-secret-yaml',
  'nuget-config-password',
];

const runner = new ScanRunner(GITLEAKS_RULES, { threads: 1, budgetMs: 30_000 });
afterAll(() => runner.close());

async function found(ruleId: string, content: string): Promise<boolean> {
  const hits = await runner.scan({ content, file: null, engines: ['gitleaks'], ruleIds: [ruleId] });
  return hits.some((h) => h.ruleId === ruleId);
}

describe('gitleaks rule corpus (the true and false positives of its rule generators)', () => {
  it('every rule of gitleaks.toml either runs here or is listed as unsupported with its reason', () => {
    expect(gitleaks.rules.length).toBeGreaterThan(200);
    const runnable = new Set(GITLEAKS_RULES.rules.map((r) => r.id));
    for (const rule of gitleaks.rules) {
      if (runnable.has(rule.id)) new RegExp(rule.regex!.source, rule.regex!.flags);
      else expect(UNSUPPORTED_GITLEAKS_RULES.find((u) => u.id === rule.id)?.reason.length ?? 0, rule.id).toBeGreaterThan(20);
    }
    expect(UNSUPPORTED_GITLEAKS_RULES.map((u) => u.id)).toEqual(['pkcs12-file']);
  });

  it('only the listed rules lack extracted examples', () => {
    const without = GITLEAKS_RULES.rules.filter((r) => (EXAMPLES[r.id]?.positives.length ?? 0) === 0).map((r) => r.id);
    expect(without.sort()).toEqual(NO_EXTRACTED_EXAMPLES);
  });

  it('each rule finds every one of its true positives and none of its false positives', async () => {
    const wrong: string[] = [];
    let checked = 0;
    for (const rule of GITLEAKS_RULES.rules) {
      const e = EXAMPLES[rule.id];
      if (!e) continue;
      for (const p of e.positives) {
        checked++;
        if (!(await found(rule.id, p))) wrong.push(`${rule.id} missed ${JSON.stringify(p)}`);
      }
      for (const n of e.negatives) {
        checked++;
        if (await found(rule.id, n)) wrong.push(`${rule.id} matched its false positive ${JSON.stringify(n)}`);
      }
    }
    expect(checked).toBeGreaterThan(6000);
    expect(wrong).toEqual([]);
  }, 120_000);

  it('rules scanned from their identifiers (semi-generic anchors) find exactly what a scan from every position finds', async () => {
    const anchored = GITLEAKS_RULES.rules.filter((r) => r.anchor);
    expect(anchored.length).toBeGreaterThan(90);
    const plain = new ScanRunner({ ...GITLEAKS_RULES, rules: anchored.map(({ anchor: _, ...r }) => r) }, { threads: 1, budgetMs: 60_000 });
    try {
      const all = anchored.flatMap((r) => [...(EXAMPLES[r.id]?.positives ?? []), ...(EXAMPLES[r.id]?.negatives ?? [])]);
      // Examples run together, so matches meet neighbours, overlap and cross lines.
      for (const content of [all.join('\n'), all.join(' '), all.join('')]) {
        const ids = anchored.map((r) => r.id);
        const fast = await runner.scan({ content, file: null, engines: ['gitleaks'], ruleIds: ids });
        const slow = await plain.scan({ content, file: null, engines: ['gitleaks'], ruleIds: ids });
        expect(fast.length).toBeGreaterThan(100);
        expect(fast).toEqual(slow);
      }
    } finally {
      await plain.close();
    }
  }, 120_000);

  it('a rule does not fire on text without its keyword, even where its pattern would match', async () => {
    // The adafruit rule's pattern needs "adafruit" anyway; slack's bot token needs "xoxb" as keyword and prefix.
    expect(await found('slack-bot-token', 'xoxb-1234567890123-1234567890123-aBcDeFgHiJkLmNoPqRsTuVwX')).toBe(true);
    expect(await found('slack-bot-token', 'XOXB-1234567890123-1234567890123-aBcDeFgHiJkLmNoPqRsTuVwX'.toLowerCase().replace('xoxb', 'xoxq'))).toBe(false);
  });
});
