import { randomUUID } from 'node:crypto';
import { DAY_MS } from '../shared/clock.js';
import type { Clock } from '../shared/clock.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { SecretFingerprints } from '../lookups/secrets/fingerprint.js';
import { GITLEAKS_RULES } from '../lookups/secrets/rule-set.js';
import { scanConfig, type ScanConfig, type ScanConfigInput } from '../lookups/secrets/scan-config.js';
import { type ScanCounts, type SecretFinding, type SecretScanner } from '../lookups/secrets/secret-scanner.js';
import { enginesOf, type ScanType } from '../lookups/secrets/secret-types.js';
import type { BillingPort } from '../storage/store.js';

/** Spec 8: "Exposed credentials scan content: 256 KB per request". */
export const MAX_SCAN_CONTENT_BYTES = 256 * 1024;
/** The billing kind of a scan with findings: 1 credit, repeats of the same content free within the window. */
export const EXPOSED_KEYS_KIND = 'exposed_keys';
export const EXPOSED_KEYS_PRICE = 1;

export interface ExposedKeysDeps {
  readonly scanner: SecretScanner;
  readonly fingerprints: SecretFingerprints;
  readonly billing: BillingPort;
  readonly clock: Clock;
  readonly repeatFreeDays: number;
  readonly validateByDefault: boolean;
}

export interface ExposedKeysRequest {
  content: string;
  type?: ScanType;
  source?: string;
  config?: ScanConfigInput;
}

/** spec 4.6 `result` of a text scan. */
export interface ExposedKeysResult {
  scan_id: string;
  repository_id: string | null;
  kind: string;
  target: string;
  type: ScanType;
  commit_sha: string | null;
  depth: number | null;
  config: ScanConfig;
  summary: ScanCounts & { engines_run: string[]; rules_requested: number; deep_scan: boolean; duration_ms: number };
  findings: Array<SecretFinding & { commit: string | null; author: string | null; email: string | null; date: string | null }>;
  reused: boolean;
  charged: boolean;
  credits: number;
  status: 'processing' | 'completed' | 'failed';
}

export function requireRuleIds(rules: readonly string[] | null): void {
  if (rules === null) return;
  const known = new Set(GITLEAKS_RULES.rules.map((r) => r.id));
  const unknown = rules.filter((r) => !known.has(r) && !/^secretlint\/[a-z0-9-]+$/.test(r));
  if (unknown.length > 0) throw new AppError(ERROR_CODES.unknownRule, `Unknown rule ids: ${unknown.slice(0, 5).join(', ')}`, { statusCode: 422 });
}

/** How many rules a scan asked for: those named, or every rule of the engines it ran. */
export function rulesRequested(rules: readonly string[] | null, type: ScanType): number {
  if (rules !== null) return rules.length;
  const engines = enginesOf(type);
  return (engines.includes('gitleaks') ? GITLEAKS_RULES.rules.length : 0) + (engines.includes('secretlint') ? SECRETLINT_RULE_COUNT : 0);
}
/** The rules of @secretlint/secretlint-rule-preset-recommend that report secrets (filter-comments only filters). */
const SECRETLINT_RULE_COUNT = 24;

/**
 * The synchronous scan of spec 4.6. Free when it finds nothing (spec 8); 1 credit when it finds
 * something, unless the account paid for the same content within the repeat-free window (then
 * `reused` and free). The content's billing name is a keyed hash: neither it nor any secret is
 * stored, and nothing is put in the outbox (no webhook carries a finding).
 */
export async function scanExposedKeys(deps: ExposedKeysDeps, accountId: string, request: ExposedKeysRequest): Promise<ExposedKeysResult> {
  if (Buffer.byteLength(request.content, 'utf8') > MAX_SCAN_CONTENT_BYTES) {
    throw new AppError(ERROR_CODES.contentTooLarge, `content is larger than ${MAX_SCAN_CONTENT_BYTES} bytes (256 KB); nothing was scanned or charged`, { statusCode: 413 });
  }
  const type = request.type ?? 0;
  const config = scanConfig(request.config, deps.validateByDefault);
  requireRuleIds(config.rules);
  const started = performance.now();
  const candidates = await deps.scanner.findAll(request.content, null, enginesOf(type), config.rules);
  const { findings, counts } = await deps.scanner.judge(candidates, config, () => deps.clock.now());

  const key = deps.fingerprints.ofContent(request.content);
  const since = deps.clock.now() - deps.repeatFreeDays * DAY_MS;
  let credits = 0;
  let reused: boolean;
  if (counts.total > 0) {
    const committed = await deps.billing.commitLookup({
      accountId,
      kind: EXPOSED_KEYS_KIND,
      charge: { type: 'repeat_free', key, since, batchId: randomUUID() },
      cache: [],
      now: deps.clock.now(),
    });
    if (!committed.ok) throw new AppError(ERROR_CODES.insufficientCredits, 'Insufficient credits. Please top up your account.', { statusCode: 402 });
    credits = committed.credits;
    reused = credits === 0;
  } else {
    reused = (await deps.billing.freshlyBilled(accountId, EXPOSED_KEYS_KIND, [key], since)).has(key);
  }
  return {
    scan_id: `scan_${randomUUID()}`,
    repository_id: null,
    kind: EXPOSED_KEYS_KIND,
    target: request.source ?? 'content',
    type,
    commit_sha: null,
    depth: null,
    config,
    summary: {
      ...counts,
      engines_run: enginesOf(type),
      rules_requested: rulesRequested(config.rules, type),
      deep_scan: false,
      duration_ms: Math.round(performance.now() - started),
    },
    findings: findings.map((f) => ({ ...f, commit: null, author: null, email: null, date: null })),
    reused,
    charged: credits > 0,
    credits,
    status: 'completed',
  };
}

