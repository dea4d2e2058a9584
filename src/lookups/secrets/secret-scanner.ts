import { falsePositiveReason, maskSecret, severityOf, severityRank, type FalsePositiveReason, type SeveritySource } from './finding-verdicts.js';
import type { SecretFingerprints } from './fingerprint.js';
import type { ScanRunner } from './scan-runner.js';
import type { ScanConfig } from './scan-config.js';
import { SECRET_ENGINES, type RawFinding, type SecretEngine, type Severity } from './secret-types.js';
import { gitleaksRule } from './rule-set.js';
import type { CredentialValidator, Validation } from './credential-validator.js';

/** One finding as spec 4.6 answers it; the secret itself is not in it. */
export interface SecretFinding {
  fingerprint: string;
  rule_id: string;
  description: string;
  severity: Severity;
  severity_source: SeveritySource;
  engines: SecretEngine[];
  file: string | null;
  start_line: number;
  end_line: number;
  column: number;
  preview: string;
  entropy: number;
  likely_false_positive: boolean;
  likely_false_positive_reason: FalsePositiveReason | null;
  validation: Validation;
}

/** A finding before filters: its verdicts, and the secret for validation only. */
interface Candidate {
  finding: SecretFinding;
  secret: string;
  start: number;
  end: number;
}

export interface ScanCounts {
  total: number;
  by_severity: Record<Severity, number>;
  by_engine: Record<SecretEngine, number>;
  suppressed: number;
  validated: number;
  live: number;
  truncated: boolean;
}

export const SECRETLINT_PREFIX = 'secretlint/';
const SECRETLINT_PACKAGE = /^@secretlint\/secretlint-rule-/;

export const NOT_VALIDATED: Validation = { status: 'not_checked', confidence: null, checked_at: null };

/**
 * Runs the chosen engines over one text and turns what they found into answers: rule filter,
 * merge of duplicates across engines, severity, fingerprint, likely false positives, baseline,
 * minimum severity, validation and the cap, in that order, with the counts of spec 4.6's summary.
 */
export class SecretScanner {
  constructor(
    private readonly runner: ScanRunner,
    private readonly fingerprints: SecretFingerprints,
    private readonly validator: CredentialValidator,
  ) {}

  async findAll(content: string, file: string | null, engines: readonly SecretEngine[], rules: readonly string[] | null): Promise<Candidate[]> {
    const gitleaksIds = rules?.filter((r) => !r.startsWith(SECRETLINT_PREFIX));
    const wanted = engines.filter((e) => rules === null || (e === SECRET_ENGINES.gitleaks ? gitleaksIds!.length > 0 : rules.some((r) => r.startsWith(SECRETLINT_PREFIX))));
    const raw = wanted.length === 0 ? [] : await this.runner.scan({ content, file, engines: wanted, ruleIds: rules === null ? undefined : gitleaksIds });
    const named = raw.map((r) => ({ ...r, ruleId: r.engine === SECRET_ENGINES.secretlint ? SECRETLINT_PREFIX + r.ruleId.replace(SECRETLINT_PACKAGE, '') : r.ruleId }));
    const kept = rules === null ? named : named.filter((r) => rules.includes(r.ruleId));
    return merge(kept).map((group) => this.candidate(group, file));
  }

  /** Filters, validates and caps candidates; the counts are of this text only. */
  async judge(candidates: Candidate[], config: ScanConfig, now: () => number): Promise<{ findings: SecretFinding[]; counts: ScanCounts }> {
    const baseline = new Set(config.baseline_fingerprints);
    const min = severityRank(config.min_severity);
    let suppressed = 0;
    const shown: Candidate[] = [];
    for (const c of candidates) {
      if (severityRank(c.finding.severity) < min) continue;
      if (baseline.has(c.finding.fingerprint) || (c.finding.likely_false_positive && !config.include_likely_false_positives)) {
        suppressed++;
        continue;
      }
      shown.push(c);
    }
    const total = shown.length;
    const capped = config.max_findings !== null && shown.length > config.max_findings ? shown.slice(0, config.max_findings) : shown;
    let validated = 0;
    let live = 0;
    if (config.validate) {
      for (const c of capped) {
        c.finding.validation = await this.validator.validate(c.finding.rule_id, c.secret, now);
        if (c.finding.validation.status !== 'not_checked') validated++;
        if (c.finding.validation.status === 'live') live++;
      }
    }
    const counts: ScanCounts = {
      total,
      by_severity: { critical: 0, high: 0, medium: 0, low: 0 },
      by_engine: { gitleaks: 0, secretlint: 0 },
      suppressed,
      validated,
      live,
      truncated: capped.length < shown.length,
    };
    for (const c of shown) {
      counts.by_severity[c.finding.severity]++;
      for (const e of c.finding.engines) counts.by_engine[e]++;
    }
    return { findings: capped.map((c) => c.finding), counts };
  }

  private candidate(group: RawFinding[], file: string | null): Candidate {
    // The standard engine's rule names a merged finding, so its fingerprint is the same in a type 0 scan.
    const lead = group.find((g) => g.engine === SECRET_ENGINES.gitleaks) ?? group[0]!;
    const engines = [...new Set(group.map((g) => g.engine))].sort() as SecretEngine[];
    const { severity, source } = group.map((g) => severityOf(g.ruleId)).reduce((a, b) => (severityRank(b.severity) > severityRank(a.severity) ? b : a));
    const reason = falsePositiveReason(lead.secret, lead.entropy, file);
    return {
      secret: lead.secret,
      start: lead.start,
      end: lead.end,
      finding: {
        fingerprint: this.fingerprints.of(lead.ruleId, lead.secret),
        rule_id: lead.ruleId,
        description: describe(lead),
        severity,
        severity_source: source,
        engines,
        file,
        start_line: lead.startLine,
        end_line: lead.endLine,
        column: lead.column,
        preview: maskSecret(lead.secret),
        entropy: Math.round(lead.entropy * 1000) / 1000,
        likely_false_positive: reason !== null,
        likely_false_positive_reason: reason,
        validation: { ...NOT_VALIDATED },
      },
    };
  }
}

function describe(f: RawFinding): string {
  if (f.engine === SECRET_ENGINES.gitleaks) return gitleaksRule(f.ruleId)?.description ?? f.ruleId;
  return `secretlint ${f.ruleId.slice(SECRETLINT_PREFIX.length)} rule: ${f.messageId ?? 'secret'}`;
}

/**
 * Findings whose secrets overlap in the text are one finding (type 2: both engines saw the same
 * credential); the same rule twice on one range is one as well. Sorted by position, then rule.
 */
function merge(found: RawFinding[]): RawFinding[][] {
  // A generic rule (generic-api-key) fires on any `key = value`; where a rule for the credential's
  // vendor found the same secret, the generic finding says less and is dropped.
  const specific = found.filter((f) => !f.ruleId.startsWith('generic'));
  const kept = found.filter((f) => !f.ruleId.startsWith('generic') || !specific.some((o) => o.start < f.end && f.start < o.end));
  const sorted = [...kept].sort((a, b) => a.start - b.start || a.end - b.end || a.ruleId.localeCompare(b.ruleId));
  const groups: RawFinding[][] = [];
  for (const f of sorted) {
    const group = groups.find((g) => g.some((o) => (o.engine !== f.engine || o.ruleId === f.ruleId) && o.start < f.end && f.start < o.end));
    if (group) group.push(f);
    else groups.push([f]);
  }
  return groups;
}
