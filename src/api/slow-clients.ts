import type { IncomingMessage, Server, ServerOptions, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Logger } from '../shared/logger.js';
import type { AddressLimits } from './address-limits.js';

/**
 * How long and how slowly a client may take to send a request, and how many may be connected at
 * once. Without them a client that trickles a body one byte at a time holds a socket, a parser and,
 * for an upload, an object-store stream for as long as it likes (the audit kept ten login bodies
 * open past 95 s, each slow upload holding three file descriptors).
 */
export interface ClientLimits {
  /** From connecting, or from the end of the previous request, to the end of the headers. */
  readonly headersTimeoutMs: number;
  /** Longest pause inside a body; also how long a body may take before the minimum rate applies. */
  readonly bodyIdleMs: number;
  /** Slowest average rate a body may arrive at, once `bodyIdleMs` has passed. */
  readonly bodyMinBytesPerSecond: number;
  /** The largest body any route takes (the upload limit): it sizes the whole-request backstop. */
  readonly maxBodyBytes: number;
  readonly maxConnections: number;
  /** What one client address may hold at once (src/api/address-limits.ts); absent: no per-address cap. */
  readonly perAddress?: AddressLimits;
}

/** Multipart framing and the small fields around the file, on top of the file itself. */
const MULTIPART_OVERHEAD_BYTES = 64 * 1024;
/** Node hands the time-outs to C++ as 32-bit milliseconds; a larger one would wrap round to a short one. */
const LONGEST_TIMEOUT_MS = 2 ** 31 - 1;
/** The time-outs are checked this often, so they bite within a quarter of their length (and never busier than 10 Hz). */
const checkEveryMs = (limits: ClientLimits): number => Math.min(1000, Math.max(100, Math.min(limits.headersTimeoutMs, limits.bodyIdleMs) / 4));

const REQUEST_TIMEOUT = 'HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';

/**
 * Node's own checks, given when the server is created: headers in time, and a whole request no
 * longer than the largest body takes at the minimum rate (a backstop behind `guardSlowBodies`,
 * which also catches bodies that nobody reads, such as one left behind a 401).
 */
export function clientTimeouts(limits: ClientLimits): { http: ServerOptions; requestTimeout: number } {
  const largestBodyMs = Math.ceil(((limits.maxBodyBytes + MULTIPART_OVERHEAD_BYTES) / limits.bodyMinBytesPerSecond) * 1000);
  return {
    http: { headersTimeout: limits.headersTimeoutMs, connectionsCheckingInterval: checkEveryMs(limits) },
    requestTimeout: Math.min(LONGEST_TIMEOUT_MS, limits.headersTimeoutMs + limits.bodyIdleMs + largestBodyMs),
  };
}

interface BodyProgress {
  readonly response: ServerResponse;
  readonly socket: Socket;
  /** socket.bytesRead when the headers were done: what came after is body. */
  readonly baseline: number;
  lastBytes: number;
  lastCheck: number;
  /** Time the client could have been sending: the server's own back-pressure pauses do not count. */
  clientMs: number;
  idleMs: number;
}

/**
 * Closes, with a 408, a request whose body pauses longer than `bodyIdleMs`, or arrives slower on
 * average than `bodyMinBytesPerSecond` after its first `bodyIdleMs` (Apache's mod_reqtimeout
 * `body=…,MinRate=…`), and caps the open connections: more are closed as soon as they are accepted.
 */
export function guardSlowBodies(server: Server, limits: ClientLimits, log: Logger): void {
  server.maxConnections = limits.maxConnections;
  const receiving = new Map<IncomingMessage, BodyProgress>();
  server.on('request', (request: IncomingMessage, response: ServerResponse) => {
    const { socket } = request;
    receiving.set(request, { response, socket, baseline: socket.bytesRead, lastBytes: 0, lastCheck: performance.now(), clientMs: 0, idleMs: 0 });
  });
  const check = setInterval(() => {
    const now = performance.now();
    for (const [request, progress] of receiving) {
      const { socket } = progress;
      if (request.complete || socket.destroyed) {
        receiving.delete(request);
        continue;
      }
      const elapsed = now - progress.lastCheck;
      progress.lastCheck = now;
      // Paused means the server stopped reading (a slow object store, a full buffer): not the client's fault.
      if (socket.isPaused()) continue;
      const bytes = socket.bytesRead - progress.baseline;
      progress.clientMs += elapsed;
      progress.idleMs = bytes > progress.lastBytes ? 0 : progress.idleMs + elapsed;
      progress.lastBytes = bytes;
      const owedBytes = (limits.bodyMinBytesPerSecond * (progress.clientMs - limits.bodyIdleMs)) / 1000;
      const reason = progress.idleMs > limits.bodyIdleMs ? 'body paused too long' : bytes < owedBytes ? 'body below the minimum rate' : undefined;
      if (reason === undefined) continue;
      receiving.delete(request);
      log.warn({ reason, bytes, ms: Math.round(progress.clientMs), method: request.method, url: request.url?.split('?')[0] }, 'slow request closed');
      if (socket.writable && !progress.response.headersSent) socket.write(REQUEST_TIMEOUT);
      socket.destroy();
    }
  }, checkEveryMs(limits)).unref();
  server.on('close', () => clearInterval(check));
}
