import { createHmac } from 'node:crypto';

/**
 * A finding's fingerprint: HMAC-SHA256 of the rule id and the secret, under a key derived from the
 * deployment's seal key, cut to 128 bits. File, line and commit are left out on purpose: a reviewed
 * finding in `baseline_fingerprints` stays suppressed after lines move or the file is renamed, and
 * the same secret in two places is one thing to rotate. Keyed, so a fingerprint seen in an answer
 * or a log cannot be tested against guessed secrets by anyone without the key.
 */
export class SecretFingerprints {
  private readonly key: Buffer;

  constructor(sealKey: Buffer) {
    this.key = createHmac('sha256', sealKey).update('sluice secret-scan fingerprint v1').digest();
  }

  of(ruleId: string, secret: string): string {
    return createHmac('sha256', this.key).update(`${ruleId}\0${secret}`).digest('hex').slice(0, 32);
  }

  /** The billing name of a scanned text: repeats of the same content within the window are free. */
  ofContent(content: string): string {
    return createHmac('sha256', this.key).update('content\0').update(content).digest('hex');
  }
}
