import type { Config } from '../config/load-config.js';
import type { ExposedKeysDeps } from '../jobs/exposed-keys-scan.js';
import { NO_VALIDATION, type CredentialValidator } from '../lookups/secrets/credential-validator.js';
import { SecretFingerprints } from '../lookups/secrets/fingerprint.js';
import { GITLEAKS_RULES } from '../lookups/secrets/rule-set.js';
import { ScanRunner } from '../lookups/secrets/scan-runner.js';
import { SecretScanner } from '../lookups/secrets/secret-scanner.js';
import type { Clock } from '../shared/clock.js';
import type { Store } from '../storage/store.js';

/** The exposed-credential scans' parts; the scan threads start on the first scan, not here. */
export function openSecretScans(
  config: Config,
  store: Store,
  sealKey: Buffer,
  clock: Clock,
  validator: CredentialValidator = NO_VALIDATION,
): { scans: ExposedKeysDeps; close: () => Promise<void> } {
  const runner = new ScanRunner(GITLEAKS_RULES, { threads: config.secretScans.threads, budgetMs: config.secretScans.budgetMs });
  const fingerprints = new SecretFingerprints(sealKey);
  return {
    scans: {
      scanner: new SecretScanner(runner, fingerprints, validator),
      fingerprints,
      billing: store.billing,
      clock,
      repeatFreeDays: config.billing.repeatFreeDays,
      validateByDefault: config.secretScans.validate,
    },
    close: () => runner.close(),
  };
}
