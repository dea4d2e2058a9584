/**
 * What an account holds, counted from the store (issue 27, finding 3), so that every API process
 * sees the same use whatever process made it: lists, monitors, stored targets, the bytes of job
 * inputs still stored, and API keys that are not revoked. One cheap read per count: list and
 * monitor rows keep their target counts, and every count goes through an account index.
 */
export interface QuotaUsage {
  lists: number;
  monitors: number;
  /** Targets stored in all the account's lists and monitors together. */
  targets: number;
  /** Targets in the account's fullest list or monitor. */
  largestList: number;
  /** Bytes of job input files not yet deleted. */
  storedBytes: number;
  apiKeys: number;
}

export interface QuotaUsagePort {
  usage(accountId: string): Promise<QuotaUsage>;
}
