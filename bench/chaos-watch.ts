/**
 * The crash test's eyes: a loopback receiver for the webhooks the workers send, and read-only
 * queries on the store they write (the data dir's SQLite file, or the PostgreSQL database the
 * machines share). Kept apart from the runner so that neither the kill schedule nor the checks have
 * to know how the evidence is gathered.
 */
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { verifySignatures } from '../src/webhooks/sign.js';

/** A plain-http receiver on loopback: counts requests and webhook-ids, checks both signatures. */
export interface Receiver { url: string; secrets: Map<string, string>; requests: number; seen: Map<string, number>; problems: string[]; close(): void }

/** `onFirst` runs before the answer to the first request of each webhook-id. */
export async function startReceiver(onFirst: (id: string) => Promise<void>): Promise<Receiver> {
  const server = http.createServer(async (req, res) => {
    const parts: Buffer[] = [];
    for await (const part of req) parts.push(part as Buffer);
    const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));
    const id = headers['webhook-id'] ?? '';
    const secret = r.secrets.get(req.url ?? '');
    const bad = secret === undefined ? ['no webhook at this path'] : verifySignatures(Buffer.concat(parts), headers, secret, Date.now());
    if (bad.length > 0) r.problems.push(`delivery ${id} to ${req.url}: ${bad.join('; ')}`);
    r.requests++;
    r.seen.set(id, (r.seen.get(id) ?? 0) + 1);
    if (r.seen.get(id) === 1) await onFirst(id);
    res.on('error', () => undefined).writeHead(200).end('ok');
  });
  const r: Receiver = { url: '', secrets: new Map(), requests: 0, seen: new Map(), problems: [], close: () => void server.close().closeAllConnections() };
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return r;
}

export interface JobView { status: string; phase: string; processed: number; total: number | null; owner: string | null }

/** Runs one read-only query with `?` placeholders; the store's own driver underneath. */
type Query = (sql: string, params?: unknown[]) => Promise<Record<string, unknown>[]>;

/**
 * Read-only looks at the store while worker processes write it. The tables are the same on both
 * stores; PostgreSQL hands BIGINT and COUNT back as text, hence the Number() around every count.
 */
export class Peek {
  private constructor(
    private readonly query: Query,
    readonly close: () => Promise<void>,
  ) {}

  /** The data dir's SQLite file, which the workers of that data dir write. */
  static sqlite(dataDir: string): Peek {
    const db = new Database(path.join(dataDir, 'sluice.db'), { fileMustExist: true });
    db.pragma('busy_timeout = 5000');
    return new Peek(async (sql, params = []) => db.prepare(sql).all(...params) as Record<string, unknown>[], async () => void db.close());
  }

  /**
   * The PostgreSQL database every machine shares. A pool of two, not one client: the kill loop and
   * the receiver ask at the same time, and a client queues overlapping queries only with a warning.
   */
  static async postgres(databaseUrl: string): Promise<Peek> {
    const pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
    // Without a listener, a connection the server ends would crash the run instead of failing a query.
    pool.on('error', () => undefined);
    await pool.query('SELECT 1');
    const numbered = (sql: string) => sql.split('?').reduce((out, part, i) => (i === 0 ? part : `${out}$${i}${part}`));
    return new Peek(async (sql, params = []) => (await pool.query(numbered(sql), params)).rows as Record<string, unknown>[], () => pool.end());
  }

  async job(id: string): Promise<JobView> {
    const [row] = await this.query('SELECT status, phase, processed_rows AS processed, total_rows AS total, lease_owner AS owner FROM jobs WHERE id = ?', [id]);
    if (!row) throw new Error(`job ${id} is not in the store`);
    return { status: String(row.status), phase: String(row.phase), processed: Number(row.processed), total: row.total === null ? null : Number(row.total), owner: (row.owner as string | null) ?? null };
  }

  /** What a worker holds now: 'phase' (split or assemble of some job) or 'chunk', once per lease. */
  async held(workerId: string): Promise<string[]> {
    const now = Date.now();
    const phases = await this.query('SELECT phase FROM jobs WHERE lease_owner = ? AND lease_expires_at > ?', [workerId, now]);
    const [chunks] = await this.query('SELECT COUNT(*) AS n FROM job_chunks WHERE lease_owner = ? AND lease_expires_at > ?', [workerId, now]);
    return [...phases.map((p) => String(p.phase)), ...Array<string>(Number(chunks?.n ?? 0)).fill('chunk')];
  }

  async claimant(messageId: string): Promise<string | undefined> {
    const [row] = await this.query("SELECT claimed_by AS c FROM webhook_deliveries WHERE message_id = ? AND status = 'pending'", [messageId]);
    return (row?.c as string | null | undefined) ?? undefined;
  }

  async statuses(): Promise<Record<string, number>> {
    const rows = await this.query('SELECT status, COUNT(*) AS n FROM jobs GROUP BY status');
    return Object.fromEntries(rows.map((r) => [String(r.status), Number(r.n)]));
  }

  async events(): Promise<string[]> {
    return (await this.query('SELECT id FROM outbox ORDER BY created_at')).map((r) => String(r.id));
  }

  /** Events not yet relayed, plus deliveries not yet successful. */
  async undelivered(): Promise<number> {
    const [row] = await this.query("SELECT (SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL) + (SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'success') AS n");
    return Number(row?.n ?? 0);
  }
}
