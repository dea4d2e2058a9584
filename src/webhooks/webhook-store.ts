import { randomUUID } from 'node:crypto';
import { webhookKeyName, type ShreddingSealer } from '../auth/data-keys.js';
import type { WebhookRow } from '../storage/records.js';
import type { WebhooksPort } from '../storage/store.js';
import { newSigningSecret } from './sign.js';
import { API_KEY_CREATED } from '../auth/key-events.js';
import { CREDITS_LOW } from '../storage/credit-alerts.js';

/** Events an account can subscribe to; `test` is only ever sent by the test endpoint. */
export const WEBHOOK_EVENTS = {
  bulkCompleted: 'bulk.completed',
  bulkPaused: 'bulk.paused',
  lookupCompleted: 'lookup.completed',
  monitorRunCompleted: 'monitor.run.completed',
  monitorAlertHighValue: 'monitor.alert.high_value',
  apiKeyCreated: API_KEY_CREATED,
  creditsLow: CREDITS_LOW,
} as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[keyof typeof WEBHOOK_EVENTS];
export const TEST_EVENT = 'test';

/**
 * Webhooks one account may have, paused ones included (deleted ones not): every event an account
 * causes is one POST per subscribed webhook, so this bounds the fan-out of one event.
 */
export const MAX_WEBHOOKS_PER_ACCOUNT = 25;

export const WEBHOOK_KINDS = { generic: 'generic', telegram: 'telegram' } as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[keyof typeof WEBHOOK_KINDS];

/** A webhook as the API shows it: the stored row, its kind one of WEBHOOK_KINDS. */
export type Webhook = Omit<WebhookRow, 'kind'> & { kind: WebhookKind };

export interface NewWebhook {
  accountId: string;
  kind: WebhookKind;
  url: string;
  events: string[];
  description: string;
  isActive: boolean;
  telegram?: { chatId: string; token: string };
  now: number;
}

export interface WebhookChanges {
  url?: string;
  events?: string[];
  description?: string;
  isActive?: boolean;
}

/**
 * Webhooks of all accounts. Secrets (the signing secret, a Telegram bot token) are sealed with the
 * data dir's key: a copy of the database alone cannot forge signatures or post to a chat.
 */
export class WebhookStore {
  constructor(
    private readonly webhooks: WebhooksPort,
    private readonly sealer: ShreddingSealer,
  ) {}

  /**
   * Returns the signing secret of a generic webhook once, here; later only an admin reads it.
   * `too_many_webhooks` (409) past MAX_WEBHOOKS_PER_ACCOUNT.
   */
  async create(input: NewWebhook): Promise<{ webhook: Webhook; secret: string | undefined }> {
    const id = randomUUID();
    const secret = input.kind === WEBHOOK_KINDS.generic ? newSigningSecret() : undefined;
    const inserting = this.webhooks.insert({
      id,
      accountId: input.accountId,
      kind: input.kind,
      url: input.url,
      events: input.events,
      description: input.description,
      isActive: input.isActive,
      // Under a data key of this webhook's own, destroyed when it is deleted (src/auth/data-keys.ts).
      secretSealed: secret === undefined ? null : await this.sealer.seal(secret, webhookKeyName(id)),
      telegramChat: input.telegram?.chatId ?? null,
      telegramTokenSealed: input.telegram ? await this.sealer.seal(input.telegram.token, webhookKeyName(id)) : null,
      now: input.now,
    }, MAX_WEBHOOKS_PER_ACCOUNT);
    // A refused webhook (one too many) leaves no data key behind.
    await inserting.catch(async (error: unknown) => {
      await this.sealer.destroy(webhookKeyName(id));
      throw error;
    });
    return { webhook: (await this.get(id))!, secret };
  }

  async get(id: string): Promise<Webhook | undefined> {
    const row = await this.webhooks.get(id);
    return row && fromRow(row);
  }

  async list(accountId: string, limit: number, offset: number): Promise<{ webhooks: Webhook[]; total: number }> {
    const { webhooks, total } = await this.webhooks.list(accountId, limit, offset);
    return { webhooks: webhooks.map(fromRow), total };
  }

  /** Active webhooks of the account that subscribe to `event`. */
  async subscribers(accountId: string, event: string): Promise<Webhook[]> {
    return (await this.webhooks.active(accountId)).map(fromRow).filter((w) => w.events.includes(event));
  }

  async update(id: string, changes: WebhookChanges, now: number): Promise<Webhook | undefined> {
    const current = await this.get(id);
    if (!current) return undefined;
    const next = { ...current, ...definedOnly(changes) };
    await this.webhooks.update(id, { url: next.url, events: next.events, description: next.description, isActive: next.isActive }, now);
    return this.get(id);
  }

  /** False when there was nothing to delete, so that a second DELETE is a 404. */
  async delete(id: string, now: number): Promise<boolean> {
    const removed = await this.webhooks.remove(id, now);
    // The row stays (soft delete) with its sealed secrets: destroying the data key erases them.
    if (removed) await this.sealer.destroy(webhookKeyName(id));
    return removed;
  }

  async signingSecret(id: string): Promise<string | undefined> {
    const row = await this.webhooks.sealedSecrets(id);
    return row?.secret ? this.sealer.unseal(row.secret) : undefined;
  }

  async telegramToken(id: string): Promise<string | undefined> {
    const row = await this.webhooks.sealedSecrets(id);
    return row?.token ? this.sealer.unseal(row.token) : undefined;
  }
}

/** The adapter stores only kinds this layer wrote. */
function fromRow(row: WebhookRow): Webhook {
  return { ...row, kind: row.kind as WebhookKind };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
