import { AppError, ERROR_CODES } from '../shared/errors.js';
import type { QuotaUsage, QuotaUsagePort } from '../storage/quota-usage.js';

/**
 * Per-account quotas (issue 27, finding 3): what one account may hold, so that a free account
 * cannot fill the database or the object store for everyone else. Use is counted from the store at
 * each write, never cached in a process, so every API process enforces the same limit. A check
 * and the write after it are two steps: two writes racing for the last place can both pass, so an
 * account can go past a count by at most the writes it has in flight at once (bounded by its
 * rate limit and the per-address request limit), never without bound.
 */
export interface QuotaLimits {
  readonly lists: number;
  readonly monitors: number;
  /** Targets in one list, or in one monitor. */
  readonly targetsPerList: number;
  /** Targets in all the account's lists and monitors together. */
  readonly targets: number;
  /** Bytes of job input files still stored. */
  readonly storedBytes: number;
  /** API keys that are not revoked (disabled ones count). */
  readonly apiKeys: number;
}

/** A paid plan of a bulk-lookup service: room for real work, not for filling a disk for free. */
export const DEFAULT_QUOTAS: QuotaLimits = {
  lists: 100,
  monitors: 50,
  targetsPerList: 100_000,
  targets: 1_000_000,
  storedBytes: 10 * 1024 * 1024 * 1024,
  apiKeys: 50,
};

export type QuotaName = keyof QuotaLimits;

/** The names GET /api/account shows, and `details.quota` of a refusal carries. */
export const QUOTA_FIELDS: Record<QuotaName, string> = {
  lists: 'lists',
  monitors: 'monitors',
  targetsPerList: 'targets_per_list',
  targets: 'targets',
  storedBytes: 'stored_bytes',
  apiKeys: 'api_keys',
};

export class AccountQuotas {
  constructor(
    private readonly usagePort: QuotaUsagePort,
    readonly limits: QuotaLimits = DEFAULT_QUOTAS,
  ) {}

  usage(accountId: string): Promise<QuotaUsage> {
    return this.usagePort.usage(accountId);
  }

  /** Throws 409 `quota_exceeded` unless the account's use of `quota` plus `adding` stays within it. */
  async require(accountId: string, quota: Exclude<QuotaName, 'targetsPerList'>, adding = 1): Promise<void> {
    const used = (await this.usage(accountId))[quota];
    refuseOver(quota, this.limits[quota], used, adding);
  }

  /** One list or monitor holding `holding` targets, given `adding` more: both the per-list and the account-wide limit. */
  async requireTargets(accountId: string, holding: number, adding: number): Promise<void> {
    if (adding <= 0) return;
    refuseOver('targetsPerList', this.limits.targetsPerList, holding, adding);
    await this.require(accountId, 'targets', adding);
  }
}

export function refuseOver(quota: QuotaName, limit: number, used: number, adding: number): void {
  if (used + adding <= limit) return;
  const field = QUOTA_FIELDS[quota];
  throw new AppError(
    ERROR_CODES.quotaExceeded,
    `This would take the account past its ${field} quota (${used} used of ${limit}); remove some first or ask for a higher quota`,
    { statusCode: 409, details: { quota: field, limit, used, requested: adding } },
  );
}
