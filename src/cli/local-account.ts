import type { BillingPort } from '../storage/store.js';

export const LOCAL_ACCOUNT_ID = 'local';

/** `sluice run` without --account bills a local account, created on first use with a grant. */
export async function ensureLocalAccount(billing: BillingPort, credits: number, now: number): Promise<string> {
  if (!(await billing.account(LOCAL_ACCOUNT_ID))) {
    try {
      await billing.createAccount({ id: LOCAL_ACCOUNT_ID, credits, now });
    } catch (e: unknown) {
      // Another process created it between our look and our insert: that is the same outcome.
      if (!(await billing.account(LOCAL_ACCOUNT_ID))) throw e;
    }
  }
  return LOCAL_ACCOUNT_ID;
}
