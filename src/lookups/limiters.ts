import pLimit, { type LimitFunction } from 'p-limit';

/**
 * One limiter per account (its lookups in flight across all its jobs in this process) and one per
 * provider (what that service is allowed to see from us). A call takes the account's slot first,
 * then the provider's: never a limiter inside itself, which is how p-limit deadlocks.
 */
export class Limiters {
  private readonly accounts = new Map<string, LimitFunction>();
  private readonly providers = new Map<string, LimitFunction>();

  constructor(
    private readonly accountConcurrency: number,
    private readonly providerConcurrency: number,
  ) {}

  run<T>(accountId: string, providerName: string, call: () => Promise<T>): Promise<T> {
    const account = getOrCreate(this.accounts, accountId, this.accountConcurrency);
    const provider = getOrCreate(this.providers, providerName, this.providerConcurrency);
    return account(() => provider(call));
  }
}

function getOrCreate(map: Map<string, LimitFunction>, key: string, concurrency: number): LimitFunction {
  let limit = map.get(key);
  if (!limit) {
    limit = pLimit(concurrency);
    map.set(key, limit);
  }
  return limit;
}
