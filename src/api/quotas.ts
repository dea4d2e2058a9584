import { AccountQuotas, QUOTA_FIELDS, type QuotaName } from '../jobs/account-quotas.js';
import type { ApiDeps } from './api-deps.js';

/** The account quotas the HTTP layer checks: the store's counts against the configured limits. */
export function apiQuotas(deps: ApiDeps): AccountQuotas {
  return new AccountQuotas(deps.engine.store.quotaUsage, deps.settings.quotas);
}

/** GET /api/account's `quotas`: each limit with what the account uses of it. */
export const QUOTAS_SCHEMA = {
  type: 'object',
  description: 'Per-account quotas (docs/security.md): each limit with what the account holds now. A write past one answers 409 `quota_exceeded` (`too_many_keys` for API keys).',
  required: Object.values(QUOTA_FIELDS),
  properties: Object.fromEntries(
    Object.values(QUOTA_FIELDS).map((field) => [
      field,
      { type: 'object', required: ['limit', 'used'], properties: { limit: { type: 'integer' }, used: { type: 'integer' } } },
    ]),
  ),
} as const;

export async function quotasView(quotas: AccountQuotas, accountId: string): Promise<Record<string, { limit: number; used: number }>> {
  const usage = await quotas.usage(accountId);
  const view: Record<string, { limit: number; used: number }> = {};
  for (const [name, field] of Object.entries(QUOTA_FIELDS) as [QuotaName, string][]) {
    // The limit is per list (or monitor): its use is the account's fullest one.
    view[field] = { limit: quotas.limits[name], used: name === 'targetsPerList' ? usage.largestList : usage[name] };
  }
  return view;
}
