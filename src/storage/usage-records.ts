/**
 * The usage log (spec 2.2: "Usage is logged per request with credits consumed and response time";
 * issue 27, item 9): one entry per request an API key made, whatever its answer.
 */
export interface UsageRecord {
  id: number;
  accountId: string;
  /** When the answer was sent, epoch ms. */
  at: number;
  keyId: string;
  method: string;
  /** The route template (`/api/jobs/:id`), never the URL: ids and query strings stay out of the log. */
  route: string;
  status: number;
  /** What the answer says it charged (a lookup's `credits`, a bulk search's `credits_used`); 0 otherwise. */
  credits: number;
  durationMs: number;
  sourceIp: string | null;
}

export type NewUsageRecord = Omit<UsageRecord, 'id'>;

export interface UsagePage {
  limit: number;
  /** Only entries older than this id. */
  before?: number;
  /** Only entries at or after this time (epoch ms). */
  since?: number;
}

export interface UsagePort {
  /** Appends a batch of entries in one transaction. */
  append(entries: readonly NewUsageRecord[]): Promise<void>;
  /** Newest first. */
  list(accountId: string, page: UsagePage): Promise<UsageRecord[]>;
  /**
   * Retention: deletes entries older than `before`, and of each account in `accounts` all but its
   * newest `keep`; returns how many went.
   */
  purge(before: number, accounts: readonly string[], keep: number): Promise<number>;
}
