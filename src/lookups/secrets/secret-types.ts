/** The two engines of spec 4.6 `type`: 0 gitleaks' rules (standard), 1 secretlint (alternate), 2 both. */
export const SECRET_ENGINES = { gitleaks: 'gitleaks', secretlint: 'secretlint' } as const;
export type SecretEngine = (typeof SECRET_ENGINES)[keyof typeof SECRET_ENGINES];

export const SCAN_TYPES = { standard: 0, alternate: 1, both: 2 } as const;
export type ScanType = (typeof SCAN_TYPES)[keyof typeof SCAN_TYPES];

export function enginesOf(type: ScanType): SecretEngine[] {
  if (type === SCAN_TYPES.standard) return [SECRET_ENGINES.gitleaks];
  if (type === SCAN_TYPES.alternate) return [SECRET_ENGINES.secretlint];
  return [SECRET_ENGINES.gitleaks, SECRET_ENGINES.secretlint];
}

export const SEVERITIES = ['critical', 'high', 'medium', 'low'] as const;
export type Severity = (typeof SEVERITIES)[number];

/** A pattern as the rule file holds it: JavaScript source and flags, translated from Go once. */
export interface RulePattern {
  readonly source: string;
  readonly flags: string;
}

export interface RuleAllowlist {
  readonly condition: 'OR' | 'AND';
  readonly regexTarget: 'secret' | 'match' | 'line';
  readonly regexes: readonly RulePattern[];
  readonly stopwords: readonly string[];
  readonly paths: readonly RulePattern[];
}

export interface SecretRule {
  readonly id: string;
  readonly description: string;
  readonly regex: RulePattern | null;
  readonly secretGroup: number;
  readonly entropy: number;
  readonly keywords: readonly string[];
  readonly path: RulePattern | null;
  readonly allowlists: readonly RuleAllowlist[];
  /**
   * For `[\w.-]{0,50}?(?:ids)...` patterns: the identifier group (same flags) and how far before it a
   * match may start; the scanner tries the pattern only there (scripts/semi-generic-anchor.mjs).
   */
  readonly anchor?: { readonly source: string; readonly lead: number };
  /** Why the rule cannot run here; such a rule is never sent to the scan thread. */
  readonly unsupported?: string;
}

export interface RuleSet {
  readonly allowlist: RuleAllowlist;
  readonly rules: readonly SecretRule[];
}

/**
 * What a scan thread reports: the secret itself travels only between the thread and the code that
 * fingerprints and masks it, and is dropped before anything is answered, logged or stored.
 */
export interface RawFinding {
  readonly engine: SecretEngine;
  readonly ruleId: string;
  /** secretlint's message id (for its description); absent for gitleaks. */
  readonly messageId?: string;
  readonly secret: string;
  /** UTF-16 offsets of the secret in the content. */
  readonly start: number;
  readonly end: number;
  readonly startLine: number;
  readonly endLine: number;
  readonly column: number;
  readonly entropy: number;
}
