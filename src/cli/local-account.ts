import type { BillingStore } from '../billing/billing-store.js';

export const LOCAL_ACCOUNT_ID = 'local';

/** `sluice run` without --account bills a local account, created on first use with a grant. */
export function ensureLocalAccount(billing: BillingStore, credits: number, now: number): string {
  if (!billing.account(LOCAL_ACCOUNT_ID)) {
    try {
      billing.createAccount({ id: LOCAL_ACCOUNT_ID, credits, now });
    } catch (e: unknown) {
      // Another process created it between our look and our insert: that is the same outcome.
      if (!billing.account(LOCAL_ACCOUNT_ID)) throw e;
    }
  }
  return LOCAL_ACCOUNT_ID;
}
