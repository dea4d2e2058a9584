import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Logger } from '../shared/logger.js';
import { ERROR_CODES } from '../shared/errors.js';
import { httpError } from './errors.js';

/** What one client address may hold of `sluice serve` at once (issue 27, finding 5). */
export interface AddressLimits {
  /** Open connections from one address; more are closed as soon as they are accepted. */
  readonly connections: number;
  /** Requests from one address whose answer has not been sent yet; more get 429 and are closed. */
  readonly requests: number;
}

const COUNTED = Symbol('counted against its address');
type Counted = FastifyRequest & { [COUNTED]?: string };

/**
 * The address a socket counts against: an IPv4-mapped IPv6 address as the IPv4 one it is, so one
 * client cannot double its share by connecting both ways.
 */
function addressOf(socket: Socket): string {
  const address = socket.remoteAddress ?? 'unknown';
  return address.startsWith('::ffff:') ? address.slice(7) : address;
}

/**
 * Caps what one client address holds, beside the server's cap on all connections: one client that
 * kept about 530 half-sent requests open filled that cap, and everyone else's `/healthz` timed
 * out. Counted per TCP peer, so it is only installed when no reverse proxy is trusted: behind one,
 * every client shares the proxy's address, and the proxy is what must limit each client.
 */
export function limitPerAddress(app: FastifyInstance, limits: AddressLimits, log: Logger): void {
  const server = app.server;
  const connections = new Map<string, number>();
  const requests = new Map<string, number>();
  const add = (counts: Map<string, number>, key: string, by: number) => {
    const n = (counts.get(key) ?? 0) + by;
    if (n <= 0) counts.delete(key);
    else counts.set(key, n);
    return n;
  };
  let refusedSince = 0;
  server.on('connection', (socket: Socket) => {
    const address = addressOf(socket);
    if (add(connections, address, 1) > limits.connections) {
      add(connections, address, -1);
      // Logged at most once a minute: a flood must not become a flood of log lines.
      if (Date.now() - refusedSince > 60_000) {
        refusedSince = Date.now();
        log.warn({ address, limit: limits.connections }, 'too many connections from one address; closing the new ones');
      }
      socket.destroy();
      return;
    }
    socket.once('close', () => add(connections, address, -1));
  });
  // Counted from the end of the headers to the answer: a request whose body never comes counts.
  app.addHook('onRequest', async (request: Counted, reply) => {
    const address = addressOf(request.raw.socket);
    if (add(requests, address, 1) > limits.requests) {
      add(requests, address, -1);
      reply.header('Retry-After', 1).header('Connection', 'close');
      throw httpError(429, ERROR_CODES.tooManyInFlight, `Too many requests in flight from this address (at most ${limits.requests})`, { limit: limits.requests });
    }
    request[COUNTED] = address;
  });
  const release = async (request: Counted) => {
    const address = request[COUNTED];
    if (address === undefined) return;
    delete request[COUNTED];
    add(requests, address, -1);
  };
  app.addHook('onResponse', release);
  app.addHook('onRequestAbort', release);
}
