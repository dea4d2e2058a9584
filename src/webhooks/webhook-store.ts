import { randomUUID } from 'node:crypto';
import { seal, unseal } from '../auth/secrets.js';
import type { Db } from '../storage/sqlite/open-database.js';
import { newSigningSecret } from './sign.js';

/** Events an account can subscribe to; `test` is only ever sent by the test endpoint. */
export const WEBHOOK_EVENTS = { bulkCompleted: 'bulk.completed', lookupCompleted: 'lookup.completed' } as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[keyof typeof WEBHOOK_EVENTS];
export const TEST_EVENT = 'test';

export const WEBHOOK_KINDS = { generic: 'generic', telegram: 'telegram' } as const;
export type WebhookKind = (typeof WEBHOOK_KINDS)[keyof typeof WEBHOOK_KINDS];

export interface Webhook {
  id: string;
  accountId: string;
  kind: WebhookKind;
  url: string;
  events: string[];
  description: string;
  isActive: boolean;
  telegramChat: string | null;
  createdAt: number;
  updatedAt: number;
}

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

type Row = Omit<Webhook, 'events' | 'isActive'> & { events: string; isActive: number };

const COLUMNS = `id, account_id AS accountId, kind, url, events, description, is_active AS isActive,
  telegram_chat AS telegramChat, created_at AS createdAt, updated_at AS updatedAt`;

/**
 * Webhooks of all accounts. Secrets (the signing secret, a Telegram bot token) are sealed with the
 * data dir's key: a copy of the database alone cannot forge signatures or post to a chat.
 */
export class WebhookStore {
  private readonly s;

  constructor(
    db: Db,
    private readonly sealKey: Buffer,
  ) {
    this.s = {
      insert: db.prepare(`INSERT INTO webhooks (id, account_id, kind, url, events, description, is_active, secret_sealed,
        telegram_chat, telegram_token_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      get: db.prepare(`SELECT ${COLUMNS} FROM webhooks WHERE id = ? AND deleted_at IS NULL`),
      list: db.prepare(`SELECT ${COLUMNS} FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at, id LIMIT ? OFFSET ?`),
      count: db.prepare('SELECT count(*) AS n FROM webhooks WHERE account_id = ? AND deleted_at IS NULL'),
      active: db.prepare(`SELECT ${COLUMNS} FROM webhooks WHERE account_id = ? AND deleted_at IS NULL AND is_active = 1`),
      secrets: db.prepare('SELECT secret_sealed AS secret, telegram_token_sealed AS token FROM webhooks WHERE id = ?'),
      update: db.prepare('UPDATE webhooks SET url = ?, events = ?, description = ?, is_active = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL'),
      remove: db.prepare('UPDATE webhooks SET deleted_at = ?, is_active = 0 WHERE id = ? AND deleted_at IS NULL'),
    };
  }

  /** Returns the signing secret of a generic webhook once, here; later only an admin reads it. */
  create(input: NewWebhook): { webhook: Webhook; secret: string | undefined } {
    const id = randomUUID();
    const secret = input.kind === WEBHOOK_KINDS.generic ? newSigningSecret() : undefined;
    this.s.insert.run(
      id,
      input.accountId,
      input.kind,
      input.url,
      JSON.stringify(input.events),
      input.description,
      input.isActive ? 1 : 0,
      secret === undefined ? null : seal(secret, this.sealKey),
      input.telegram?.chatId ?? null,
      input.telegram ? seal(input.telegram.token, this.sealKey) : null,
      input.now,
      input.now,
    );
    return { webhook: this.get(id)!, secret };
  }

  get(id: string): Webhook | undefined {
    const row = this.s.get.get(id) as Row | undefined;
    return row && fromRow(row);
  }

  list(accountId: string, limit: number, offset: number): { webhooks: Webhook[]; total: number } {
    const rows = this.s.list.all(accountId, limit, offset) as Row[];
    return { webhooks: rows.map(fromRow), total: (this.s.count.get(accountId) as { n: number }).n };
  }

  /** Active webhooks of the account that subscribe to `event`. */
  subscribers(accountId: string, event: string): Webhook[] {
    return (this.s.active.all(accountId) as Row[]).map(fromRow).filter((w) => w.events.includes(event));
  }

  update(id: string, changes: WebhookChanges, now: number): Webhook | undefined {
    const current = this.get(id);
    if (!current) return undefined;
    const next = { ...current, ...definedOnly(changes) };
    this.s.update.run(next.url, JSON.stringify(next.events), next.description, next.isActive ? 1 : 0, now, id);
    return this.get(id);
  }

  /** False when there was nothing to delete, so that a second DELETE is a 404. */
  delete(id: string, now: number): boolean {
    return this.s.remove.run(now, id).changes === 1;
  }

  signingSecret(id: string): string | undefined {
    const row = this.s.secrets.get(id) as { secret: string | null } | undefined;
    return row?.secret ? unseal(row.secret, this.sealKey) : undefined;
  }

  telegramToken(id: string): string | undefined {
    const row = this.s.secrets.get(id) as { token: string | null } | undefined;
    return row?.token ? unseal(row.token, this.sealKey) : undefined;
  }
}

function fromRow(row: Row): Webhook {
  return { ...row, events: JSON.parse(row.events) as string[], isActive: row.isActive === 1 };
}

function definedOnly<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}
