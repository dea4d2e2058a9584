import type { AuditPort, AuditRecord, AuditRetention } from '../store.js';
import type { Db } from './open-database.js';

const COLUMNS =
  'id, account_id AS accountId, at, action, actor_type AS actorType, actor_id AS actorId, actor_name AS actorName, target_id AS targetId, source_ip AS sourceIp, user_agent AS userAgent, label';

/** Accounts' audit logs, cut to their retention on every write so no sweeper is needed. */
export class SqliteAudit implements AuditPort {
  private readonly s;

  constructor(private readonly db: Db) {
    this.s = {
      insert: db.prepare(
        'INSERT INTO audit_log (account_id, at, action, actor_type, actor_id, actor_name, target_id, source_ip, user_agent, label) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
      ),
      dropOld: db.prepare('DELETE FROM audit_log WHERE account_id = ? AND at < ?'),
      // The id of the newest entry past the first `max`: it and everything older go.
      dropBeyond: db.prepare(
        'DELETE FROM audit_log WHERE account_id = ? AND id <= (SELECT id FROM audit_log WHERE account_id = ? ORDER BY id DESC LIMIT 1 OFFSET ?)',
      ),
      page: db.prepare(`SELECT ${COLUMNS} FROM audit_log WHERE account_id = ? AND id < ? ORDER BY id DESC LIMIT ?`),
    };
  }

  async append(entry: Omit<AuditRecord, 'id'>, keep: AuditRetention): Promise<void> {
    this.db
      .transaction(() => {
        this.s.insert.run(entry.accountId, entry.at, entry.action, entry.actorType, entry.actorId, entry.actorName, entry.targetId, entry.sourceIp, entry.userAgent, entry.label ?? null);
        this.s.dropOld.run(entry.accountId, keep.since);
        this.s.dropBeyond.run(entry.accountId, entry.accountId, keep.max);
      })
      .immediate();
  }

  async list(accountId: string, page: { limit: number; before?: number }): Promise<AuditRecord[]> {
    return this.s.page.all(accountId, page.before ?? Number.MAX_SAFE_INTEGER, page.limit) as AuditRecord[];
  }
}
