/**
 * The crash test's eyes: a loopback receiver for the webhooks the workers send, and read-only
 * queries on the SQLite file they write. Kept apart from the runner so that neither the kill
 * schedule nor the checks have to know how the evidence is gathered.
 */
import http from 'node:http';
import path from 'node:path';
import Database from 'better-sqlite3';
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

/** Read-only looks at a data dir's SQLite file while worker processes write it. */
export class Peek {
  private readonly db: Database.Database;
  constructor(dataDir: string) {
    this.db = new Database(path.join(dataDir, 'sluice.db'), { fileMustExist: true });
    this.db.pragma('busy_timeout = 5000');
  }
  job(id: string): { status: string; phase: string; processed: number; total: number | null; owner: string | null } {
    return this.db.prepare('SELECT status, phase, processed_rows AS processed, total_rows AS total, lease_owner AS owner FROM jobs WHERE id = ?').get(id) as never;
  }
  /** What a worker holds now: 'phase' (split or assemble of some job) or 'chunk', once per lease. */
  held(workerId: string): string[] {
    const now = Date.now();
    const phases = this.db.prepare('SELECT phase FROM jobs WHERE lease_owner = ? AND lease_expires_at > ?').all(workerId, now) as { phase: string }[];
    const chunks = this.db.prepare('SELECT COUNT(*) AS n FROM job_chunks WHERE lease_owner = ? AND lease_expires_at > ?').get(workerId, now) as { n: number };
    return [...phases.map((p) => p.phase), ...Array<string>(chunks.n).fill('chunk')];
  }
  claimant(messageId: string): string | undefined {
    return (this.db.prepare("SELECT claimed_by AS c FROM webhook_deliveries WHERE message_id = ? AND status = 'pending'").get(messageId) as { c: string | null } | undefined)?.c ?? undefined;
  }
  statuses(): Record<string, number> {
    const rows = this.db.prepare('SELECT status, COUNT(*) AS n FROM jobs GROUP BY status').all() as { status: string; n: number }[];
    return Object.fromEntries(rows.map((r) => [r.status, r.n]));
  }
  events(): string[] {
    return (this.db.prepare('SELECT id FROM outbox ORDER BY created_at').all() as { id: string }[]).map((r) => r.id);
  }
  /** Events not yet relayed, plus deliveries not yet successful. */
  undelivered(): number {
    return (this.db.prepare("SELECT (SELECT COUNT(*) FROM outbox WHERE sent_at IS NULL) + (SELECT COUNT(*) FROM webhook_deliveries WHERE status <> 'success') AS n").get() as { n: number }).n;
  }
  close(): void {
    this.db.close();
  }
}
