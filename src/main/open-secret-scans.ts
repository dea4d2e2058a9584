import type { Config } from '../config/load-config.js';
import type { ExposedKeysDeps } from '../jobs/exposed-keys-scan.js';
import { SecretFingerprints } from '../lookups/secrets/fingerprint.js';
import { HttpCredentialValidator } from '../lookups/secrets/http-credential-validator.js';
import { GITLEAKS_RULES } from '../lookups/secrets/rule-set.js';
import { ScanRunner } from '../lookups/secrets/scan-runner.js';
import { SecretScanner } from '../lookups/secrets/secret-scanner.js';
import type { RepoScanDeps } from '../jobs/repo-scan-job.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { Store } from '../storage/store.js';
import type { AddressPolicy } from '../webhooks/address-policy.js';
import { guardedDispatcher } from '../webhooks/guarded-dispatcher.js';

/**
 * The exposed-credential scans' parts; the scan threads start on the first scan, not here.
 * Validation calls go out under the webhook address policy: the provider URLs are fixed, but a
 * test origin or a poisoned resolver must still not reach a private address in production.
 */
export function openSecretScans(
  config: Config,
  store: Store,
  sealKey: Buffer,
  clock: Clock,
  log: Logger,
  policy: AddressPolicy,
): { scans: ExposedKeysDeps; repoScans: RepoScanDeps; close: () => Promise<void> } {
  const runner = new ScanRunner(GITLEAKS_RULES, { threads: config.secretScans.threads, budgetMs: config.secretScans.budgetMs });
  const fingerprints = new SecretFingerprints(sealKey);
  const dispatcher = guardedDispatcher(policy);
  const validator = new HttpCredentialValidator({ dispatcher, timeoutMs: config.secretScans.validateTimeoutMs, originOverride: config.secretScans.validatorOrigin });
  const scanner = new SecretScanner(runner, fingerprints, validator);
  return {
    repoScans: {
      scans: store.repoScans,
      scanner,
      billing: store.billing,
      clock,
      log,
      policy,
      leaseMs: config.jobs.leaseSeconds * 1000,
      clone: { timeoutMs: config.secretScans.repoTimeoutMs, maxBytes: config.secretScans.repoMaxBytes },
      validateByDefault: config.secretScans.validate,
    },
    scans: {
      scanner,
      fingerprints,
      billing: store.billing,
      clock,
      repeatFreeDays: config.billing.repeatFreeDays,
      validateByDefault: config.secretScans.validate,
    },
    close: async () => {
      await runner.close();
      await dispatcher.close();
    },
  };
}
