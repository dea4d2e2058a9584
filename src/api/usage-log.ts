import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/logger.js';
import type { NewUsageRecord, UsagePort } from '../storage/usage-records.js';

/**
 * Each account keeps 30 days of its usage log and at most its newest 100,000 entries: at the
 * default rate limit (200 a minute) a busy account writes about 288,000 a day, and the log must
 * not grow the database without bound for an account that spends nothing.
 */
export const USAGE_RETENTION = { days: 30, entriesPerAccount: 100_000 } as const;
/** Entries wait at most this long in a process before they are written, in one batch. */
export const USAGE_FLUSH_MS = 500;
const MAX_BUFFERED = 1_000;
const PURGE_MS = 60_000;
const DAY_MS = 86_400_000;

declare module 'fastify' {
  interface FastifyRequest {
    usageCredits?: number;
  }
}

/**
 * What the answer says it charged: the top-level `credits` of a lookup, or `credits_used` of a
 * bulk search. Jobs charge as they run, not in the request: their charges are in the job.
 */
function creditsOf(payload: string): number | undefined {
  if (!payload.includes('"credits')) return undefined;
  try {
    const body = JSON.parse(payload) as { credits?: unknown; credits_used?: unknown } | null;
    const value = body?.credits ?? body?.credits_used;
    return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? value : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Writes one usage entry per request made with an API key (issue 27, item 9; spec 2.2), after its
 * answer is sent: the route template, the status, the credits the answer reports and the response
 * time. Entries are batched (one write per USAGE_FLUSH_MS or MAX_BUFFERED entries), so the log
 * costs a request nothing on its way and the database a statement a batch; a process killed with
 * -9 loses at most its last batch, which is the trade: a usage log is a record, not a ledger (the
 * credits themselves are in the ledger). A failed write is logged and dropped for the same reason.
 */
export function logUsage(app: FastifyInstance, port: UsagePort, clock: Clock, log: Logger): void {
  let buffer: NewUsageRecord[] = [];
  const active = new Set<string>();
  const flush = async (): Promise<void> => {
    if (buffer.length === 0) return;
    const batch = buffer;
    buffer = [];
    await port.append(batch).catch((error: unknown) => log.warn({ err: error, entries: batch.length }, 'usage entries not written'));
  };
  const purge = async (): Promise<void> => {
    const accounts = [...active];
    active.clear();
    await port
      .purge(clock.now() - USAGE_RETENTION.days * DAY_MS, accounts, USAGE_RETENTION.entriesPerAccount)
      .catch((error: unknown) => log.warn({ err: error }, 'usage log not purged'));
  };
  const flusher = setInterval(() => void flush(), USAGE_FLUSH_MS);
  const purger = setInterval(() => void purge(), PURGE_MS);
  flusher.unref();
  purger.unref();

  app.addHook('onSend', async (request: FastifyRequest, reply, payload) => {
    if (request.caller && reply.statusCode < 300 && typeof payload === 'string') {
      const credits = creditsOf(payload);
      if (credits !== undefined) request.usageCredits = credits;
    }
    return payload;
  });
  app.addHook('onResponse', async (request, reply) => {
    const caller = request.caller;
    if (!caller) return;
    buffer.push({
      accountId: caller.accountId,
      at: clock.now(),
      keyId: caller.key.id,
      method: request.method,
      route: request.routeOptions.url ?? 'unmatched',
      status: reply.statusCode,
      credits: request.usageCredits ?? 0,
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
      sourceIp: request.ip ?? null,
    });
    active.add(caller.accountId);
    if (buffer.length >= MAX_BUFFERED) void flush();
  });
  app.addHook('onClose', async () => {
    clearInterval(flusher);
    clearInterval(purger);
    await flush();
  });
}
