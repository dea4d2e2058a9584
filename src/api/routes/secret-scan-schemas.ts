import { SCAN_CONFIG_SCHEMA } from '../../lookups/secrets/scan-config.js';
import { SEVERITIES } from '../../lookups/secrets/secret-types.js';

const NULLABLE_STRING = { type: ['string', 'null'] } as const;
const COUNTS_BY_SEVERITY = {
  type: 'object',
  required: [...SEVERITIES],
  properties: Object.fromEntries(SEVERITIES.map((s) => [s, { type: 'integer' }])),
} as const;

export const FINDING_SCHEMA = {
  type: 'object',
  required: [
    'fingerprint', 'rule_id', 'description', 'severity', 'severity_source', 'engines', 'file', 'start_line', 'end_line', 'column',
    'preview', 'entropy', 'commit', 'author', 'email', 'date', 'likely_false_positive', 'validation',
  ],
  properties: {
    fingerprint: { type: 'string', description: 'Keyed hash of rule and secret (not of file or line): stable when lines move; put it in baseline_fingerprints once reviewed' },
    rule_id: { type: 'string', description: 'gitleaks rule id, or `secretlint/<rule>` for the alternate engine' },
    description: { type: 'string' },
    severity: { type: 'string', enum: [...SEVERITIES] },
    severity_source: { type: 'string', enum: ['sluice_table', 'sluice_default'], description: 'sluice_table: the per-rule table of docs/exposed-credentials.md; sluice_default: a rule not in it (medium)' },
    engines: { type: 'array', items: { type: 'string', enum: ['gitleaks', 'secretlint'] }, description: 'Engines that found it; both when type 2 merged a duplicate' },
    file: { ...NULLABLE_STRING, description: 'Path in the repository; null for pasted content' },
    start_line: { type: 'integer', description: '1-based' },
    end_line: { type: 'integer' },
    column: { type: 'integer', description: '1-based column of the secret on its first line' },
    preview: { type: 'string', description: 'The secret masked: at most its first 4 and last 2 characters' },
    entropy: { type: 'number', description: 'Shannon entropy of the secret, bits per character' },
    commit: { ...NULLABLE_STRING, description: 'Repository scans: the commit that added it' },
    author: NULLABLE_STRING,
    email: NULLABLE_STRING,
    date: { ...NULLABLE_STRING, description: 'ISO time of the commit' },
    likely_false_positive: { type: 'boolean' },
    likely_false_positive_reason: { type: ['string', 'null'], enum: ['vendor_example', 'placeholder', 'low_entropy', 'test_path', null] },
    validation: {
      type: 'object',
      required: ['status', 'confidence', 'checked_at'],
      properties: {
        status: { type: 'string', enum: ['live', 'revoked', 'unknown', 'not_checked'] },
        confidence: { type: ['number', 'null'] },
        checked_at: NULLABLE_STRING,
      },
    },
  },
} as const;

export const SCAN_RESULT_SCHEMA = {
  type: 'object',
  required: ['scan_id', 'repository_id', 'kind', 'target', 'type', 'commit_sha', 'depth', 'config', 'summary', 'findings', 'reused', 'charged', 'credits', 'status'],
  properties: {
    scan_id: { type: 'string' },
    repository_id: { ...NULLABLE_STRING, description: 'Repository scans: the repository URL as scanned; null for content' },
    kind: { type: 'string', enum: ['exposed_keys', 'repository'] },
    target: { type: 'string', description: 'The `source` label (content scans) or the repository URL' },
    type: { type: 'integer', enum: [0, 1, 2] },
    commit_sha: { ...NULLABLE_STRING, description: 'Repository scans: the newest commit scanned' },
    depth: { type: ['integer', 'null'], description: 'Repository scans: commits scanned' },
    config: { ...SCAN_CONFIG_SCHEMA, additionalProperties: true, properties: { ...SCAN_CONFIG_SCHEMA.properties, rules: { type: ['array', 'null'], items: { type: 'string' } }, max_findings: { type: ['integer', 'null'] } } },
    summary: {
      type: 'object',
      required: ['total', 'by_severity', 'by_engine', 'engines_run', 'rules_requested', 'deep_scan', 'duration_ms', 'suppressed', 'validated', 'live', 'truncated'],
      properties: {
        total: { type: 'integer', description: 'Findings after filters, before max_findings' },
        by_severity: COUNTS_BY_SEVERITY,
        by_engine: { type: 'object', required: ['gitleaks', 'secretlint'], properties: { gitleaks: { type: 'integer' }, secretlint: { type: 'integer' } } },
        engines_run: { type: 'array', items: { type: 'string' } },
        rules_requested: { type: 'integer' },
        deep_scan: { type: 'boolean', description: 'true when history was scanned (repository scans)' },
        duration_ms: { type: 'integer' },
        suppressed: { type: 'integer', description: 'Findings hidden by baseline_fingerprints or as likely false positives' },
        validated: { type: 'integer' },
        live: { type: 'integer' },
        truncated: { type: 'boolean', description: 'max_findings cut the findings' },
      },
    },
    findings: { type: 'array', items: FINDING_SCHEMA },
    reused: { type: 'boolean', description: 'The same content was billed within the repeat-free window: this scan is free' },
    charged: { type: 'boolean' },
    credits: { type: 'integer', description: 'Credits this call cost: 0 with no findings or when reused, else 1' },
    status: { type: 'string', enum: ['processing', 'completed', 'failed'] },
  },
} as const;

export const REFUSED = { type: 'object', properties: { error: { type: 'string' }, code: { type: 'string' } } } as const;
