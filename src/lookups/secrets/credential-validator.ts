/** spec 4.6 `validation`: whether a found credential still works, as its provider answered. */
export interface Validation {
  /** `live`, `revoked`, `unknown`; `not_checked` when the scan did not ask (config.validate false) or no validator knows the rule. */
  status: 'live' | 'revoked' | 'unknown' | 'not_checked';
  /** 0..1 for an answer from the provider; null when nothing was asked. */
  confidence: number | null;
  /** ISO time of the check; null when nothing was asked. */
  checked_at: string | null;
}

/** Asks a provider whether a credential works; never throws (a failure is `unknown`). */
export interface CredentialValidator {
  validate(ruleId: string, secret: string, now: () => number): Promise<Validation>;
}

/** For deployments that turn validation off: nothing is ever asked. */
export const NO_VALIDATION: CredentialValidator = {
  async validate() {
    return { status: 'not_checked', confidence: null, checked_at: null };
  },
};
