import { AppError, ERROR_CODES } from '../../shared/errors.js';
import type { NewWebhookRow, WebhookRow } from '../records.js';
import type { SealedWebhookSecrets, WebhooksPort } from '../store.js';
import type { PgDatabase } from './pg-database.js';

type Row = Omit<WebhookRow, 'events'> & { events: string };

const COLUMNS = `id, account_id AS "accountId", kind, url, events, description, is_active AS "isActive",
  telegram_chat AS "telegramChat", created_at AS "createdAt", updated_at AS "updatedAt"`;

/** Webhook rows; a deleted webhook keeps its row (for its delivery history) but is never read. */
export class PgWebhooks implements WebhooksPort {
  constructor(private readonly db: PgDatabase) {}

  /**
   * At READ COMMITTED two creates would each count the other's row as absent and both pass the
   * cap: a transaction-scoped advisory lock per account makes the second one count after the first
   * commits. Accounts need no row here, so the lock is on the account id, not on a row.
   */
  async insert(row: NewWebhookRow, maxPerAccount?: number): Promise<void> {
    await this.db.transaction(async (tx) => {
      if (maxPerAccount !== undefined) {
        await tx.query("SELECT pg_advisory_xact_lock(hashtext('sluice.webhooks:' || $1))", [row.accountId]);
        const { rows } = await tx.query<{ n: number }>('SELECT count(*)::int AS n FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL', [row.accountId]);
        if (rows[0]!.n >= maxPerAccount) throw tooMany(maxPerAccount);
      }
      await tx.query(
      `INSERT INTO webhooks (id, account_id, kind, url, events, description, is_active, secret_sealed,
         telegram_chat, telegram_token_sealed, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)`,
      [row.id, row.accountId, row.kind, row.url, JSON.stringify(row.events), row.description, row.isActive, row.secretSealed, row.telegramChat, row.telegramTokenSealed, row.now],
      );
    });
  }

  async get(id: string): Promise<WebhookRow | undefined> {
    const { rows } = await this.db.query<Row>(`SELECT ${COLUMNS} FROM webhooks WHERE id = $1 AND deleted_at IS NULL`, [id]);
    return rows[0] && fromRow(rows[0]);
  }

  /** The page and the count are two reads, as in SQLite: a webhook made between them may show in one only. */
  async list(accountId: string, limit: number, offset: number): Promise<{ webhooks: WebhookRow[]; total: number }> {
    const [page, count] = await Promise.all([
      this.db.query<Row>(`SELECT ${COLUMNS} FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL ORDER BY created_at, id COLLATE "C" LIMIT $2 OFFSET $3`, [
        accountId,
        limit,
        offset,
      ]),
      this.db.query<{ n: number }>('SELECT count(*) AS n FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL', [accountId]),
    ]);
    return { webhooks: page.rows.map(fromRow), total: count.rows[0]!.n };
  }

  async active(accountId: string): Promise<WebhookRow[]> {
    const { rows } = await this.db.query<Row>(
      `SELECT ${COLUMNS} FROM webhooks WHERE account_id = $1 AND deleted_at IS NULL AND is_active ORDER BY created_at, id COLLATE "C"`,
      [accountId],
    );
    return rows.map(fromRow);
  }

  async update(id: string, row: { url: string; events: string[]; description: string; isActive: boolean }, now: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE webhooks SET url = $1, events = $2, description = $3, is_active = $4, updated_at = $5 WHERE id = $6 AND deleted_at IS NULL',
      [row.url, JSON.stringify(row.events), row.description, row.isActive, now, id],
    );
    return rowCount === 1;
  }

  async remove(id: string, now: number): Promise<boolean> {
    const { rowCount } = await this.db.query('UPDATE webhooks SET deleted_at = $1, is_active = FALSE WHERE id = $2 AND deleted_at IS NULL', [now, id]);
    return rowCount === 1;
  }

  async sealedSecrets(id: string): Promise<SealedWebhookSecrets | undefined> {
    const { rows } = await this.db.query<SealedWebhookSecrets>(
      'SELECT secret_sealed AS secret, telegram_token_sealed AS token, previous_secret_sealed AS previous, previous_secret_until AS "previousUntil" FROM webhooks WHERE id = $1',
      [id],
    );
    return rows[0];
  }

  async rotateSecret(id: string, expected: string | null, sealed: string, previous: string | null, previousUntil: number | null, now: number): Promise<boolean> {
    const { rowCount } = await this.db.query(
      'UPDATE webhooks SET secret_sealed = $1, previous_secret_sealed = $2, previous_secret_until = $3, updated_at = $4 WHERE id = $5 AND deleted_at IS NULL AND secret_sealed IS NOT DISTINCT FROM $6',
      [sealed, previous, previousUntil, now, id, expected],
    );
    return rowCount === 1;
  }
}

function tooMany(maxPerAccount: number): AppError {
  return new AppError(ERROR_CODES.tooManyWebhooks, `An account may have at most ${maxPerAccount} webhooks; delete one before adding another`, { statusCode: 409 });
}

function fromRow(row: Row): WebhookRow {
  return { ...row, events: JSON.parse(row.events) as string[] };
}
