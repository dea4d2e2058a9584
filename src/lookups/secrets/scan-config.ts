import { SEVERITIES, type ScanType, type Severity } from './secret-types.js';

/** spec 4.6 `config`, with the deployment's defaults filled in: what an answer echoes. */
export interface ScanConfig {
  readonly rules: readonly string[] | null;
  readonly min_severity: Severity;
  readonly baseline_fingerprints: readonly string[];
  readonly include_likely_false_positives: boolean;
  readonly max_findings: number | null;
  readonly validate: boolean;
}

export interface ScanConfigInput {
  rules?: string[];
  min_severity?: string;
  baseline_fingerprints?: string[];
  include_likely_false_positives?: boolean;
  max_findings?: number;
  validate?: boolean;
}

export function scanConfig(input: ScanConfigInput | undefined, validateByDefault: boolean): ScanConfig {
  return {
    rules: input?.rules ? [...new Set(input.rules)] : null,
    min_severity: (input?.min_severity as Severity | undefined) ?? 'low',
    baseline_fingerprints: input?.baseline_fingerprints ?? [],
    include_likely_false_positives: input?.include_likely_false_positives ?? false,
    max_findings: input?.max_findings ?? null,
    validate: input?.validate ?? validateByDefault,
  };
}

export const SCAN_CONFIG_SCHEMA = {
  type: 'object',
  additionalProperties: false,
  properties: {
    rules: { type: 'array', items: { type: 'string', minLength: 1, maxLength: 100 }, maxItems: 500, description: 'Run only these rule ids (gitleaks ids; secretlint rules as `secretlint/<name>`). Omit to run all' },
    min_severity: { type: 'string', enum: [...SEVERITIES], description: 'Return findings at or above this severity; default low (all)' },
    baseline_fingerprints: { type: 'array', items: { type: 'string', maxLength: 64 }, maxItems: 10_000, description: 'Fingerprints of reviewed findings: suppressed and counted in summary.suppressed' },
    include_likely_false_positives: { type: 'boolean', description: 'Also return findings flagged likely_false_positive; default false (hidden, counted in summary.suppressed)' },
    max_findings: { type: 'integer', minimum: 1, maximum: 10_000, description: 'Cap on findings returned; summary.truncated says when findings were cut' },
    validate: { type: 'boolean', description: 'Ask the provider whether supported credentials still work; omit for the deployment default (SLUICE_SECRET_SCAN_VALIDATE)' },
  },
} as const;

export type { ScanType };
