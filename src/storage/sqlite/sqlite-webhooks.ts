import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { NewWebhookRow, WebhookRow } from '../records.js';
import type { SealedWebhookSecrets, WebhooksPort } from '../store.js';
import type { Db } from './open-database.js';

type Row = Omit<WebhookRow, 'events' | 'isActive'> & { events: string; isActive: number };

const COLUMNS = `id, account_id AS accountId, kind, url, events, description, is_active AS isActive,
  telegram_chat AS telegramChat, created_at AS createdAt, updated_at AS updatedAt`;

/** Webhook rows; a deleted webhook keeps its row (for its delivery history) but is never read. */
export class SqliteWebhooks implements WebhooksPort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      insert: db.prepare(`INSERT INTO webhooks (id, account_id, kind, url, events, description, is_active, secret_sealed,
        telegram_chat, telegram_token_sealed, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`),
      get: db.prepare(`SELECT ${COLUMNS} FROM webhooks WHERE id = ? AND deleted_at IS NULL`),
      list: db.prepare(`SELECT ${COLUMNS} FROM webhooks WHERE account_id = ? AND deleted_at IS NULL ORDER BY created_at, id LIMIT ? OFFSET ?`),
      count: db.prepare('SELECT count(*) AS n FROM webhooks WHERE account_id = ? AND deleted_at IS NULL'),
      active: db.prepare(`SELECT ${COLUMNS} FROM webhooks WHERE account_id = ? AND deleted_at IS NULL AND is_active = 1`),
      secrets: db.prepare('SELECT secret_sealed AS secret, telegram_token_sealed AS token, previous_secret_sealed AS previous, previous_secret_until AS "previousUntil" FROM webhooks WHERE id = ?'),
      update: db.prepare('UPDATE webhooks SET url = ?, events = ?, description = ?, is_active = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL'),
      rotate: db.prepare('UPDATE webhooks SET secret_sealed = ?, previous_secret_sealed = ?, previous_secret_until = ?, updated_at = ? WHERE id = ? AND deleted_at IS NULL AND secret_sealed IS ?'),
      remove: db.prepare('UPDATE webhooks SET deleted_at = ?, is_active = 0 WHERE id = ? AND deleted_at IS NULL'),
    };
  }

  /** The count and the insert in one IMMEDIATE transaction: a second writer waits, then counts this one. */
  async insert(row: NewWebhookRow, maxPerAccount?: number): Promise<void> {
    this.db
      .transaction(() => {
        if (maxPerAccount !== undefined && (this.s.count.get(row.accountId) as { n: number }).n >= maxPerAccount) {
          throw tooMany(maxPerAccount);
        }
        this.insertSync(row);
      })
      .immediate();
  }

  private insertSync(row: NewWebhookRow): void {
    this.s.insert.run(
      row.id,
      row.accountId,
      row.kind,
      row.url,
      JSON.stringify(row.events),
      row.description,
      row.isActive ? 1 : 0,
      row.secretSealed,
      row.telegramChat,
      row.telegramTokenSealed,
      row.now,
      row.now,
    );
  }

  async get(id: string): Promise<WebhookRow | undefined> {
    const row = this.s.get.get(id) as Row | undefined;
    return row && fromRow(row);
  }

  async list(accountId: string, limit: number, offset: number): Promise<{ webhooks: WebhookRow[]; total: number }> {
    const rows = this.s.list.all(accountId, limit, offset) as Row[];
    return { webhooks: rows.map(fromRow), total: (this.s.count.get(accountId) as { n: number }).n };
  }

  async active(accountId: string): Promise<WebhookRow[]> {
    return (this.s.active.all(accountId) as Row[]).map(fromRow);
  }

  async update(id: string, row: { url: string; events: string[]; description: string; isActive: boolean }, now: number): Promise<boolean> {
    return this.s.update.run(row.url, JSON.stringify(row.events), row.description, row.isActive ? 1 : 0, now, id).changes === 1;
  }

  async remove(id: string, now: number): Promise<boolean> {
    return this.s.remove.run(now, id).changes === 1;
  }

  async sealedSecrets(id: string): Promise<SealedWebhookSecrets | undefined> {
    return this.s.secrets.get(id) as SealedWebhookSecrets | undefined;
  }

  async rotateSecret(id: string, expected: string | null, sealed: string, previous: string | null, previousUntil: number | null, now: number): Promise<boolean> {
    return this.s.rotate.run(sealed, previous, previousUntil, now, id, expected).changes === 1;
  }
}

function tooMany(maxPerAccount: number): AppError {
  return new AppError(ERROR_CODES.tooManyWebhooks, `An account may have at most ${maxPerAccount} webhooks; delete one before adding another`, { statusCode: 409 });
}

function fromRow(row: Row): WebhookRow {
  return { ...row, events: JSON.parse(row.events) as string[], isActive: row.isActive === 1 };
}
