/** What the store keeps besides jobs (job-records.ts): plain data, the same from every adapter. */

export interface Account {
  id: string;
  email: string | null;
  credits: number;
  status: 'active' | 'suspended';
  /** Requests per rolling minute; null means the configured default. */
  rateLimit: number | null;
  createdAt: number;
}

export interface LedgerEntry {
  id: string;
  accountId: string;
  delta: number;
  reason: string;
  kind: string | null;
  jobId: string | null;
  createdAt: number;
}

export interface OutboxEvent {
  /** Becomes the Standard Webhooks `webhook-id` of every delivery of this event. */
  id: string;
  event: string;
  accountId: string;
  payload: unknown;
}

/** An API key as stored: its secret only as a hash, and sealed for the short reveal window. */
export interface ApiKeyRow {
  id: string;
  accountId: string;
  name: string;
  keyPrefix: string;
  role: string;
  isActive: boolean;
  revokedAt: number | null;
  createdAt: number;
  keyHash: string;
  sealed: string | null;
  revealUntil: number | null;
  /** When the key stops working (a chosen expiry, or the end of a roll's grace period); null: never. */
  expiresAt: number | null;
  /** The key a roll made in this one's place. */
  replacedBy: string | null;
}

/** A new key row as the store inserts it. */
export type NewApiKeyRow = Omit<ApiKeyRow, 'isActive' | 'revokedAt' | 'createdAt' | 'expiresAt' | 'replacedBy'> & {
  now: number;
  expiresAt?: number | null;
  event?: OutboxEvent | undefined;
};

export interface WebhookRow {
  id: string;
  accountId: string;
  kind: string;
  url: string;
  events: string[];
  description: string;
  isActive: boolean;
  telegramChat: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface NewWebhookRow {
  id: string;
  accountId: string;
  kind: string;
  url: string;
  events: string[];
  description: string;
  isActive: boolean;
  secretSealed: string | null;
  telegramChat: string | null;
  telegramTokenSealed: string | null;
  now: number;
}

export const DELIVERY_STATUSES = { pending: 'pending', success: 'success', failed: 'failed' } as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[keyof typeof DELIVERY_STATUSES];

export interface Delivery {
  id: string;
  webhookId: string;
  messageId: string;
  eventType: string;
  payload: unknown;
  status: DeliveryStatus;
  attempts: number;
  responseStatus: number | null;
  responseBody: string | null;
  errorCode: string | null;
  nextAttemptAt: number | null;
  lastAttemptAt: number | null;
  createdAt: number;
}

/** What one attempt changed; `nextAttemptAt` is set only while the delivery stays pending. */
export interface AttemptRecord {
  status: DeliveryStatus;
  payload: unknown;
  responseStatus: number | null;
  responseBody: string | null;
  errorCode: string | null;
  nextAttemptAt: number | null;
  at: number;
}

export type IdempotencyClaim = { state: 'new' } | { state: 'in_flight' } | { state: 'done'; jobId: string; fingerprint: string };

export interface BreachRow {
  /** E.164. */
  phone: string;
  breach: string;
  /** ISO date, or null when unknown. */
  breachedAt: string | null;
}

export interface BreachRecord {
  breach: string;
  /** Null when the source did not say when the breach happened. */
  breachedAt: string | null;
}

export interface EmailBreachRow {
  /** Lower case, as the email pipelines normalise it. */
  email: string;
  breach: string;
  /** ISO date, or null when unknown. */
  breachedAt: string | null;
  /** Exposed data as the source names it; none of them holds a `;` (the stored separator). */
  dataClasses: readonly string[];
}

export interface EmailBreachRecord {
  breach: string;
  /** Null when the source did not say when the breach happened. */
  breachedAt: string | null;
  dataClasses: string[];
}

/** One company as the directory stores it. */
export interface CompanyRecord {
  name: string;
  nameKey: string;
  coreKey: string;
  domain: string | null;
  description: string | null;
  industry: string | null;
  employeeCount: number | null;
  country: string | null;
  website: string | null;
  /** JSON object of the further columns that have a value, or null. */
  extra: string | null;
}

/** A company as the lookups read it: the API's snake_case, with its id, `extra` as JSON text. */
export interface CompanyRow {
  id: number;
  name: string;
  domain: string | null;
  description: string | null;
  industry: string | null;
  employee_count: number | null;
  country: string | null;
  website: string | null;
  extra: string | null;
}

export interface CompanyWrite {
  /** Companies new to the directory. */
  inserted: number;
  /** Companies already there whose stored values changed. */
  updated: number;
  /** Companies already there with exactly these values. */
  unchanged: number;
}
