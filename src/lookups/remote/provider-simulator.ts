import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { EmbeddedGenderEngine } from '../gender/embedded-gender-engine.js';
import type { LookupProvider } from '../lookup-provider.js';
import { seededRandom } from '../../shared/seeded-random.js';

export interface SimulatorOptions {
  /** Fixed delay before every answer. */
  latencyMs: number;
  /** Share of requests (0..1) answered 502, drawn from a PRNG seeded with `seed`. */
  errorRate: number;
  /** Every Nth request is answered 429 with `Retry-After: retryAfterSeconds`. */
  rateLimitEvery: number | undefined;
  retryAfterSeconds: number;
  /** Answer every request 503, as a service that is down behind its load balancer would. */
  down: boolean;
  /** The exact Authorization value required; any other is answered 401. */
  requireAuth: string | undefined;
  seed: number;
}

/** What a simulator is started with: its behaviour, and optionally what it answers. */
export interface SimulatorSetup extends Partial<SimulatorOptions> {
  /**
   * Engines by lookup kind, served at `/v1/lookups/{kind}` over the default `gender` one (a
   * `gender` entry here replaces it): e.g. an EmbeddedBreachIndex on a database of fixture data,
   * so that remote phone_breaches answers equal embedded ones.
   */
  engines?: ReadonlyMap<string, LookupProvider>;
}

export interface SimulatorStats {
  requests: number;
  /** TCP connections accepted: with keep-alive, far fewer than requests. */
  connections: number;
  keys: number;
  inFlight: number;
  maxInFlight: number;
  byStatus: Record<number, number>;
}

export interface ProviderSimulator {
  url: string;
  stats: SimulatorStats;
  /** Changes behaviour for the requests that arrive from now on; a new `seed` restarts the PRNG. */
  set(options: Partial<SimulatorOptions>): void;
  close(): Promise<void>;
}

const DEFAULTS: SimulatorOptions = {
  latencyMs: 20,
  errorRate: 0,
  rateLimitEvery: undefined,
  retryAfterSeconds: 1,
  down: false,
  requireAuth: undefined,
  seed: 1,
};

/** Refuses bodies past this size rather than buffering whatever a broken client sends. */
const MAX_BODY_BYTES = 16 * 1024 * 1024;

/**
 * A remote lookup service on loopback that speaks the protocol of RemoteLookupProvider, for tests
 * and benchmarks. Kind `gender` answers from the embedded engine, so remote answers equal embedded
 * ones; further kinds answer from the `engines` given; other kinds are 404.
 */
export async function startProviderSimulator(setup: SimulatorSetup = {}): Promise<ProviderSimulator> {
  const { engines: extra, ...options } = setup;
  let current: SimulatorOptions = { ...DEFAULTS, ...options };
  let random = seededRandom(current.seed);
  const engines = new Map<string, LookupProvider>([['gender', new EmbeddedGenderEngine()], ...(extra ?? [])]);
  const stats: SimulatorStats = { requests: 0, connections: 0, keys: 0, inFlight: 0, maxInFlight: 0, byStatus: {} };
  const timers = new Set<NodeJS.Timeout>();

  const server = http.createServer((req, res) => {
    const n = ++stats.requests;
    stats.maxInFlight = Math.max(stats.maxInFlight, ++stats.inFlight);
    res.on('close', () => stats.inFlight--);
    const opts = current;
    const answer = (status: number, body?: unknown, headers: Record<string, string> = {}) => {
      const timer = setTimeout(() => {
        timers.delete(timer);
        stats.byStatus[status] = (stats.byStatus[status] ?? 0) + 1;
        const text = body === undefined ? '' : JSON.stringify(body);
        res.writeHead(status, { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
      }, opts.latencyMs);
      timers.add(timer);
    };
    readBody(req).then(
      async (raw) => {
        const kind = /^\/v1\/lookups\/([^/?]+)$/.exec(req.url ?? '')?.[1];
        const engine = kind === undefined ? undefined : engines.get(decodeURIComponent(kind));
        if (opts.requireAuth !== undefined && req.headers.authorization !== opts.requireAuth) return answer(401, { error: 'unauthorized' });
        if (req.method !== 'POST' || engine === undefined) return answer(404, { error: 'not_found' });
        if (opts.down) return answer(503, { error: 'unavailable' });
        if (opts.rateLimitEvery !== undefined && n % opts.rateLimitEvery === 0) {
          return answer(429, { error: 'rate_limited' }, { 'retry-after': String(opts.retryAfterSeconds) });
        }
        if (opts.errorRate > 0 && random() < opts.errorRate) return answer(502, { error: 'bad_gateway' });
        const keys = parseKeys(raw);
        if (keys === undefined) return answer(400, { error: 'bad_request' });
        stats.keys += keys.length;
        const outcomes = await engine.lookup(keys);
        return answer(200, { results: outcomes });
      },
      () => answer(413, { error: 'payload_too_large' }),
    ).catch(() => answer(500, { error: 'internal' }));
  });
  server.on('connection', () => stats.connections++);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    set(next) {
      current = { ...current, ...next };
      if (next.seed !== undefined) random = seededRandom(next.seed);
    },
    async close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      // Keep-alive sockets of the clients would otherwise hold close() open until they time out.
      server.closeAllConnections();
      await closed;
    },
  };
}

function readBody(req: http.IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) reject(new Error('body too large'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

function parseKeys(raw: string): string[] | undefined {
  try {
    const keys = (JSON.parse(raw) as { keys?: unknown } | null)?.keys;
    return Array.isArray(keys) && keys.every((k) => typeof k === 'string') ? keys : undefined;
  } catch {
    return undefined;
  }
}

