import { describe, expect, it } from 'vitest';
import severity from '../../../src/lookups/secrets/rules/severity.json' with { type: 'json' };
import { falsePositiveReason, maskSecret, severityOf } from '../../../src/lookups/secrets/finding-verdicts.js';
import { SecretFingerprints } from '../../../src/lookups/secrets/fingerprint.js';
import { GITLEAKS_RULES } from '../../../src/lookups/secrets/rule-set.js';

describe('masked previews', () => {
  it.each([
    ['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', 'ghp_********Ux'],
    ['abcdefghijkl', 'abc********'],
    ['short', 's********'],
    ['ab', '********'],
    ['-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----', '----********--'],
  ])('%j shows as %j', (secret, preview) => {
    expect(maskSecret(secret)).toBe(preview);
  });

  it('never shows more than a quarter of a secret, and not its length', () => {
    for (let n = 1; n < 80; n++) {
      const secret = 'Z'.repeat(n);
      const shown = maskSecret(secret).replace(/\*/g, '');
      expect(shown.length).toBeLessThanOrEqual(Math.max(0, Math.floor(n / 4)) + (n >= 16 ? 2 : 0));
      expect(shown.length * 4).toBeLessThanOrEqual(Math.max(n, 4) + 8);
    }
    expect(maskSecret('a'.repeat(20)).length).toBe(maskSecret('a'.repeat(60)).length);
  });
});

describe('likely false positives', () => {
  it.each([
    ['AKIAIOSFODNN7EXAMPLE', 3.7, null, 'vendor_example'],
    ['sk_test_4eC39HqLyjWDarjtT1zdp7dc', 4.2, null, 'vendor_example'],
    ['your_api_key_here_123', 3.9, null, 'placeholder'],
    ['xxxxxxxxxxxxxxxxxxxxxxxx', 0, null, 'placeholder'],
    ['${GITHUB_TOKEN}', 3.5, null, 'placeholder'],
    ['aaaabbbbaaaabbbb1', 1.3, null, 'low_entropy'],
    ['q8Zr2LmX7cVb4NkJ9hTy', 4.3, 'test/fixtures/config.yml', 'test_path'],
    ['q8Zr2LmX7cVb4NkJ9hTy', 4.3, 'src/app.spec.ts', 'test_path'],
    ['q8Zr2LmX7cVb4NkJ9hTy', 4.3, 'src/config/prod.ts', null],
    ['q8Zr2LmX7cVb4NkJ9hTy', 4.3, null, null],
  ])('%j (entropy %d, file %j): %j', (secret, entropy, file, reason) => {
    expect(falsePositiveReason(secret, entropy, file)).toBe(reason);
  });
});

describe('severity table', () => {
  it('grades every gitleaks rule from the table, and falls back to medium with its source said', () => {
    for (const rule of GITLEAKS_RULES.rules) expect(severityOf(rule.id).source, rule.id).toBe('sluice_table');
    expect(Object.keys(severity.rules).length).toBeGreaterThan(240);
    expect(severityOf('private-key')).toEqual({ severity: 'critical', source: 'sluice_table' });
    expect(severityOf('a-rule-from-the-future')).toEqual({ severity: 'medium', source: 'sluice_default' });
  });
});

describe('fingerprints', () => {
  it('are keyed hashes of rule and secret only: the same under one key, different under another or for another rule', () => {
    const a = new SecretFingerprints(Buffer.alloc(32, 1));
    const b = new SecretFingerprints(Buffer.alloc(32, 2));
    expect(a.of('github-pat', 'ghp_x')).toBe(a.of('github-pat', 'ghp_x'));
    expect(a.of('github-pat', 'ghp_x')).toMatch(/^[0-9a-f]{32}$/);
    expect(a.of('github-pat', 'ghp_x')).not.toBe(b.of('github-pat', 'ghp_x'));
    expect(a.of('github-pat', 'ghp_x')).not.toBe(a.of('generic-api-key', 'ghp_x'));
    expect(a.ofContent('text')).not.toBe(a.of('content', 'text'));
  });
});
