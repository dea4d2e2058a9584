import { randomUUID } from 'node:crypto';
import { overlapKeyName, rotatedSecretKeyName, webhookKeyName, type ShreddingSealer } from '../auth/data-keys.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
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
    const sealed = await this.webhooks.sealedSecrets(id);
    const removed = await this.webhooks.remove(id, now);
    // The row stays (soft delete) with its sealed secrets: destroying their data keys erases them
    // (after a rotation the current secret and the previous one have keys of their own).
    if (removed) {
      await this.sealer.destroy(webhookKeyName(id));
      for (const value of [sealed?.secret, sealed?.token, sealed?.previous]) await this.sealer.destroyKeyOf(value);
    }
    return removed;
  }

  async signingSecret(id: string): Promise<string | undefined> {
    return (await this.signingSecrets(id, -Infinity))[0];
  }

  /**
   * The secrets a delivery at `now` is signed with: the current one, then the one before the last
   * rotation while its overlap lasts. A rotation destroys the data key of the secret it replaces
   * just after it commits, so a read that fell between the two finds that key gone: read once more.
   */
  async signingSecrets(id: string, now: number): Promise<string[]> {
    for (let attempt = 0; ; attempt++) {
      const row = await this.webhooks.sealedSecrets(id);
      if (!row?.secret) return [];
      const current = await this.sealer.unseal(row.secret);
      if (current === undefined && attempt === 0) continue;
      const inOverlap = row.previous && row.previousUntil !== null && row.previousUntil !== undefined && row.previousUntil > now;
      const previous = inOverlap ? await this.sealer.unseal(row.previous!) : undefined;
      return [current, previous].filter((x): x is string => x !== undefined);
    }
  }

  /**
   * Issue 27, item 7: a new signing secret, returned once. With `overlapMs` above 0 the secret it
   * replaces still signs every delivery beside the new one until `previousUntil`, sealed under a
   * data key the sweep destroys then; with 0 it stops at once. The replaced secret's own data key
   * is destroyed here, so its copies in free pages, the WAL or old backups open no more: only the
   * copy sealed for the overlap does, and only until its end.
   */
  async rotateSecret(webhook: Webhook, overlapMs: number, now: number): Promise<{ secret: string; previousUntil: number | null }> {
    if (webhook.kind !== WEBHOOK_KINDS.generic) throw new AppError(ERROR_CODES.invalidState, 'Only a generic webhook has a signing secret', { statusCode: 409 });
    const before = await this.webhooks.sealedSecrets(webhook.id);
    const current = before?.secret ? await this.sealer.unseal(before.secret) : undefined;
    const secret = newSigningSecret();
    const sealed = await this.sealer.seal(secret, rotatedSecretKeyName(webhook.id));
    const previousUntil = overlapMs > 0 && current !== undefined ? now + overlapMs : null;
    const previous = previousUntil === null ? null : await this.sealer.seal(current!, overlapKeyName(webhook.id, previousUntil));
    if (!(await this.webhooks.rotateSecret(webhook.id, before?.secret ?? null, sealed, previous, previousUntil, now))) {
      await this.sealer.destroyKeyOf(sealed);
      await this.sealer.destroyKeyOf(previous);
      if (!(await this.get(webhook.id))) throw new AppError(ERROR_CODES.notFound, 'Webhook not found', { statusCode: 404 });
      throw new AppError(ERROR_CODES.invalidState, 'The signing secret was rotated by another request meanwhile; read it, or rotate again', { statusCode: 409 });
    }
    // The key of the secret replaced, and of an earlier overlap cut short by this rotation.
    await this.sealer.destroyKeyOf(before?.secret);
    if (before?.previous && before.previous !== previous) await this.sealer.destroyKeyOf(before.previous);
    return { secret, previousUntil };
  }

  /** When the previous secret stops signing, or undefined outside an overlap. */
  async overlapEnd(id: string, now: number): Promise<number | undefined> {
    const row = await this.webhooks.sealedSecrets(id);
    return row?.previous && row.previousUntil && row.previousUntil > now ? row.previousUntil : undefined;
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
