import type { ComplianceCheck, ComplianceChecksPort } from '../compliance-checks-port.js';
import type { Db } from './open-database.js';

type Row = { id: number; createdAt: number; settledAt: number | null; answer: string | null };

export class SqliteComplianceChecks implements ComplianceChecksPort {
  private readonly s;

  constructor(db: Db) {
    this.s = {
      latest: db.prepare(
        'SELECT id, created_at AS createdAt, settled_at AS settledAt, answer FROM compliance_checks WHERE account_id = ? AND key_hash = ? AND created_at >= ? ORDER BY created_at DESC, id DESC LIMIT 1',
      ),
      open: db.prepare('INSERT INTO compliance_checks (account_id, key_hash, created_at) VALUES (?, ?, ?)'),
      settle: db.prepare('UPDATE compliance_checks SET settled_at = ?, answer = ? WHERE id = ? AND settled_at IS NULL'),
    };
  }

  async latest(accountId: string, keyHash: string, since: number): Promise<ComplianceCheck | undefined> {
    const row = this.s.latest.get(accountId, keyHash, since) as Row | undefined;
    return row && { id: row.id, createdAt: row.createdAt, settledAt: row.settledAt, answer: row.answer === null ? null : (JSON.parse(row.answer) as unknown) };
  }

  async open(accountId: string, keyHash: string, now: number): Promise<number> {
    return Number(this.s.open.run(accountId, keyHash, now).lastInsertRowid);
  }

  async settle(id: number, answer: unknown, now: number): Promise<void> {
    this.s.settle.run(now, JSON.stringify(answer), id);
  }
}
