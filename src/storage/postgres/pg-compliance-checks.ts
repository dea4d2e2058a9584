import type { ComplianceCheck, ComplianceChecksPort } from '../compliance-checks-port.js';
import type { PgDatabase } from './pg-database.js';

export class PgComplianceChecks implements ComplianceChecksPort {
  constructor(private readonly db: PgDatabase) {}

  async latest(accountId: string, keyHash: string, since: number): Promise<ComplianceCheck | undefined> {
    const { rows } = await this.db.query<{ id: string; createdAt: string; settledAt: string | null; answer: string | null }>(
      `SELECT id, created_at AS "createdAt", settled_at AS "settledAt", answer FROM compliance_checks
        WHERE account_id = $1 AND key_hash = $2 AND created_at >= $3 ORDER BY created_at DESC, id DESC LIMIT 1`,
      [accountId, keyHash, since],
    );
    const row = rows[0];
    return row && { id: Number(row.id), createdAt: Number(row.createdAt), settledAt: row.settledAt === null ? null : Number(row.settledAt), answer: row.answer === null ? null : (JSON.parse(row.answer) as unknown) };
  }

  async open(accountId: string, keyHash: string, now: number): Promise<number> {
    const { rows } = await this.db.query<{ id: string }>('INSERT INTO compliance_checks (account_id, key_hash, created_at) VALUES ($1, $2, $3) RETURNING id', [accountId, keyHash, now]);
    return Number(rows[0]!.id);
  }

  async settle(id: number, answer: unknown, now: number): Promise<void> {
    await this.db.query('UPDATE compliance_checks SET settled_at = $1, answer = $2 WHERE id = $3 AND settled_at IS NULL', [now, JSON.stringify(answer), id]);
  }
}
