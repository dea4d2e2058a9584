import exampleKeys from './rules/example-keys.json' with { type: 'json' };
import severities from './rules/severity.json' with { type: 'json' };
import type { Severity } from './secret-types.js';

/** Where a finding's severity came from: Sluice's table per rule, or the default for a rule not in it. */
export const SEVERITY_SOURCES = { table: 'sluice_table', default: 'sluice_default' } as const;
export type SeveritySource = (typeof SEVERITY_SOURCES)[keyof typeof SEVERITY_SOURCES];

const TABLE = severities.rules as Record<string, Severity>;
const DEFAULT_SEVERITY: Severity = 'medium';
const RANK: Record<Severity, number> = { critical: 4, high: 3, medium: 2, low: 1 };

export function severityOf(ruleId: string): { severity: Severity; source: SeveritySource } {
  const s = TABLE[ruleId];
  return s ? { severity: s, source: SEVERITY_SOURCES.table } : { severity: DEFAULT_SEVERITY, source: SEVERITY_SOURCES.default };
}

export function severityRank(s: Severity): number {
  return RANK[s];
}

const EXAMPLE_KEYS = new Set(exampleKeys.keys.map((k) => k.value));
// Words that documentation and templates put where a real credential would go.
const PLACEHOLDER = /example|placeholder|dummy|sample|changeme|change_me|redacted|your[_-]?(?:api|secret|token|key|password)|insert[_-]?|replace[_-]?me|x{6,}|\*{4,}|^<[^>]*>$|^\$\{[^}]*\}$|^\{\{[^}]*\}\}$|0{8,}|1234567890|abcdef(?:gh|123)/i;
const TEST_PATH = /(?:^|\/)(?:tests?|specs?|__tests__|__mocks__|mocks?|fixtures?|testdata|test-data|examples?|samples?)(?:\/|$)|[._-](?:test|spec|fixture|example|sample)s?\.[A-Za-z0-9]+$/i;
/** Below this Shannon entropy (bits a character) a "secret" is more likely a word or a pattern than a key. */
export const LOW_ENTROPY = 3;

export const FALSE_POSITIVE_REASONS = {
  vendorExample: 'vendor_example',
  placeholder: 'placeholder',
  lowEntropy: 'low_entropy',
  testPath: 'test_path',
} as const;
export type FalsePositiveReason = (typeof FALSE_POSITIVE_REASONS)[keyof typeof FALSE_POSITIVE_REASONS];

/** Why a finding is likely not a live credential, or null. Private keys are judged by path only: their body is base64 of high entropy anyway. */
export function falsePositiveReason(secret: string, entropy: number, file: string | null): FalsePositiveReason | null {
  if (EXAMPLE_KEYS.has(secret)) return FALSE_POSITIVE_REASONS.vendorExample;
  if (PLACEHOLDER.test(secret)) return FALSE_POSITIVE_REASONS.placeholder;
  if (entropy < LOW_ENTROPY) return FALSE_POSITIVE_REASONS.lowEntropy;
  if (file !== null && TEST_PATH.test(file)) return FALSE_POSITIVE_REASONS.testPath;
  return null;
}

/**
 * What an answer shows of a secret: enough of its start to tell which credential it is (the
 * vendor prefix) and nothing that helps use it. At most the first 4 and last 2 characters of a long
 * secret, never more than a quarter of it; the rest is a fixed run of asterisks, so the length does
 * not show either.
 */
export function maskSecret(secret: string): string {
  const oneLine = secret.replace(/\s+/g, ' ');
  const head = Math.min(4, Math.floor(oneLine.length / 4));
  const tail = oneLine.length >= 16 ? 2 : 0;
  return `${oneLine.slice(0, head)}********${tail > 0 ? oneLine.slice(-tail) : ''}`;
}
