import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface RecordedRequest {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  /** Every byte the client sent, head and body: what a test searches for anything but the prefix. */
  raw: string;
}

/**
 * A Pwned Passwords range service on loopback: `GET /range/{prefix}` answers the rows it was given,
 * and with `Add-Padding: true` as many rows again of count 0, as HIBP pads. Records every request.
 * `failNext` queues statuses (with a Retry-After) to answer before the good answers resume.
 */
export async function startRangeFake(hashes: readonly { hash: string; count: number }[]) {
  const ranges = new Map<string, string[]>();
  for (const { hash, count } of hashes) {
    const rows = ranges.get(hash.slice(0, 5)) ?? [];
    rows.push(`${hash.slice(5)}:${count}`);
    ranges.set(hash.slice(0, 5), rows);
  }
  const requests: RecordedRequest[] = [];
  const failures: { status: number; retryAfter?: string; body?: string }[] = [];
  const sockets = new Set<import('node:net').Socket>();
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const head = [`${req.method} ${req.url}`, ...Object.entries(req.headers).map(([k, v]) => `${k}: ${String(v)}`)].join('\n');
      requests.push({ method: req.method!, path: req.url!, headers: req.headers, raw: `${head}\n\n${Buffer.concat(chunks).toString('latin1')}` });
      const failure = failures.shift();
      if (failure) {
        res.writeHead(failure.status, failure.retryAfter ? { 'retry-after': failure.retryAfter } : {});
        res.end(failure.body ?? '');
        return;
      }
      const match = /^\/range\/([0-9A-F]{5})$/.exec(req.url ?? '');
      if (req.method !== 'GET' || !match) {
        res.writeHead(400);
        res.end('The hash prefix was not in a valid format');
        return;
      }
      const rows = [...(ranges.get(match[1]!) ?? [])];
      if (req.headers['add-padding'] === 'true') {
        for (let i = 0; i < 800; i++) rows.push(`${randomBytes(18).toString('hex').slice(0, 35).toUpperCase()}:0`);
        rows.sort();
      }
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.end(rows.join('\r\n'));
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    failNext(...statuses: { status: number; retryAfter?: string; body?: string }[]) {
      failures.push(...statuses);
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
