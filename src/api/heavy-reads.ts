import type { FastifyInstance, FastifyRequest } from 'fastify';
import { ERROR_CODES } from '../shared/errors.js';
import { httpError } from './errors.js';

/**
 * The reads whose cost grows with what an account stores rather than with the page asked for: a
 * million watched targets grouped and counted, a deep page of a monitor's targets, its runs'
 * results and changes. An account with no credits can make them as expensive as it likes (issue
 * 27, finding 2), so each account may have only so many of them in flight in this process; more
 * are refused at once with 429 and Retry-After, before they cost anything. The SQLite store also
 * runs the heaviest of them on a thread of its own (src/storage/sqlite/sqlite-read-thread.ts).
 */
export const HEAVY_READS = new Set([
  'GET /api/monitoring/targets',
  'GET /api/monitors/:id/targets',
  'GET /api/monitors/:id/runs/:runId/results',
  'GET /api/monitors/:id/runs/:runId/results/download',
  'GET /api/agent/monitors/:id/runs',
  'GET /api/agent/monitors/:id/runs/:runId/results',
  'GET /api/agent/monitoring/runs',
  'GET /api/agent/monitoring/results',
]);

/** Heavy reads one account may have in flight in this process, unless configured. */
export const DEFAULT_HEAVY_READS_PER_ACCOUNT = 2;

/** Heavy reads of one account that may wait for a slot, per slot: past them, 429 at once. */
const WAITING_PER_SLOT = 4;

const HELD = Symbol('heavy read slot');
type Holding = FastifyRequest & { [HELD]?: string };

interface AccountSlots {
  inFlight: number;
  waiting: Array<() => void>;
}

/**
 * Installs the bound on `app`: the routes registered after this call are covered. A request past
 * the bound waits for a slot (a few may), which costs nothing while it waits; an account that
 * keeps more waiting than that gets 429 at once. Answering 429 to every request past the bound
 * made a flooding client spin, and the spinning cost the event loop more than the reads.
 */
export function boundHeavyReads(app: FastifyInstance, perAccount: number): void {
  const accounts = new Map<string, AccountSlots>();
  const release = (request: Holding) => {
    const accountId = request[HELD];
    if (accountId === undefined) return;
    delete request[HELD];
    const slots = accounts.get(accountId);
    if (!slots) return;
    const next = slots.waiting.shift();
    if (next) return next();
    slots.inFlight--;
    if (slots.inFlight <= 0) accounts.delete(accountId);
  };
  app.addHook('preHandler', async (request: Holding, reply) => {
    if (!HEAVY_READS.has(`${request.method} ${request.routeOptions.url}`)) return;
    const accountId = request.caller?.accountId;
    if (accountId === undefined) return;
    let slots = accounts.get(accountId);
    if (!slots) accounts.set(accountId, (slots = { inFlight: 0, waiting: [] }));
    if (slots.inFlight < perAccount) {
      slots.inFlight++;
    } else {
      if (slots.waiting.length >= perAccount * WAITING_PER_SLOT) {
        reply.header('Retry-After', 1);
        throw httpError(429, ERROR_CODES.tooManyHeavyReads, `Too many heavy reads in flight for this account (at most ${perAccount}); retry when one has answered`, { limit: perAccount });
      }
      // The slot is handed over by the request that releases it: inFlight stays as it is.
      await new Promise<void>((resolve) => slots!.waiting.push(resolve));
      if (request.raw.destroyed) {
        request[HELD] = accountId;
        release(request);
        return reply;
      }
    }
    request[HELD] = accountId;
  });
  app.addHook('onResponse', async (request: Holding) => release(request));
  app.addHook('onRequestAbort', async (request: Holding) => release(request));
}
