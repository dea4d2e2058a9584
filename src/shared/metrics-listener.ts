import { timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

/**
 * `GET /metrics` for a process with no API (`sluice worker`): a bare node:http server, so a worker
 * does not carry Fastify and the API's routes. Same token rule as `serve`'s route.
 */
export async function startMetricsListener(registry: Registry, options: { host: string; port: number; token: string | undefined }): Promise<{ address: AddressInfo; close: () => Promise<void> }> {
  const server = http.createServer((request, response) => {
    void answer(registry, options.token, request, response);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  return {
    address: server.address() as AddressInfo,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()).closeAllConnections()),
  };
}

async function answer(registry: Registry, token: string | undefined, request: http.IncomingMessage, response: http.ServerResponse): Promise<void> {
  const path = (request.url ?? '').split('?')[0];
  if (path !== '/metrics') return end(response, 404, 'not found\n');
  if (request.method !== 'GET' && request.method !== 'HEAD') return end(response, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
  if (token !== undefined && !sameToken(request.headers.authorization, token)) return end(response, 401, 'a bearer token is required\n', { 'WWW-Authenticate': 'Bearer' });
  try {
    end(response, 200, await registry.metrics(), { 'Content-Type': registry.contentType });
  } catch {
    end(response, 500, 'metrics could not be collected\n');
  }
}

function sameToken(header: string | undefined, token: string): boolean {
  const given = Buffer.from(/^Bearer (.+)$/i.exec(header ?? '')?.[1] ?? '');
  const wanted = Buffer.from(token);
  return given.length === wanted.length && timingSafeEqual(given, wanted);
}

function end(response: http.ServerResponse, status: number, body: string, headers: Record<string, string> = {}): void {
  response.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
  response.end(body);
}
