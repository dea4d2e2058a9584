import gitleaks from './rules/gitleaks.json' with { type: 'json' };
import type { RuleSet, SecretRule } from './secret-types.js';

/**
 * gitleaks' rules (MIT, rules/LICENSE-gitleaks), translated to JavaScript by
 * scripts/import-gitleaks-rules.mjs. Rules it could not translate stay in the file with the reason
 * and are left out here.
 */
export const GITLEAKS_SOURCE = { commit: gitleaks.commit, date: gitleaks.date, source: gitleaks.source } as const;

const all = gitleaks.rules as unknown as SecretRule[];

export const GITLEAKS_RULES: RuleSet = {
  allowlist: gitleaks.allowlist as unknown as RuleSet['allowlist'],
  rules: all.filter((r) => r.unsupported === undefined && r.regex !== null),
};

/** Rules in the file that cannot run, with why. */
export const UNSUPPORTED_GITLEAKS_RULES: ReadonlyArray<{ id: string; reason: string }> = all
  .filter((r) => r.unsupported !== undefined)
  .map((r) => ({ id: r.id, reason: r.unsupported! }));

export function gitleaksRule(id: string): SecretRule | undefined {
  return byId.get(id);
}
const byId = new Map(all.map((r) => [r.id, r]));
