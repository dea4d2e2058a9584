import http from 'node:http';
import net from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { buildApp } from '../../src/api/build-app.js';
import type { ClientLimits } from '../../src/api/slow-clients.js';
import { loadConfig } from '../../src/config/load-config.js';
import { apiDeps } from '../../src/main/open-api.js';
import { silentLogger } from '../../src/shared/logger.js';
import { openTestEngine } from '../support/test-engine.js';

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const HALF_SENT = 'POST /api/auth/login HTTP/1.1\r\nHost: sluice\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"email":';

/** A socket from 127.0.0.1 that sends half a request and waits; what the server answered, and whether it closed it. */
function halfSent(port: number): Promise<{ socket: net.Socket; answer: () => string; closed: () => boolean }> {
  return new Promise((resolve) => {
    let answer = '';
    let closed = false;
    const socket = net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' }, () => {
      socket.write(HALF_SENT);
      resolve({ socket, answer: () => answer, closed: () => closed });
    });
    socket.on('data', (d) => (answer += d.toString()));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
      resolve({ socket, answer: () => answer, closed: () => closed });
    });
  });
}

function healthzFrom(localAddress: string, port: number): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = http.get({ host: '127.0.0.1', port, path: '/healthz', localAddress, agent: false, timeout: 3000 }, (response) => {
      response.resume();
      response.on('end', () => resolve({ status: response.statusCode ?? 0, ms: performance.now() - started }));
    });
    request.on('timeout', () => request.destroy(new Error('timed out')));
    request.on('error', reject);
  });
}

/**
 * Issue 27, finding 5: one client holding about 530 half-sent requests filled the server's
 * connection cap and made another client's /healthz time out. Here the cap on all connections is
 * 40 and one address opens 50 half-sent requests; another address is still answered at once.
 */
it('one address cannot take the server: its connections and requests in flight are capped, on by default', async () => {
  const defaults = loadConfig({}).api;
  expect([defaults.maxConnectionsPerAddress, defaults.maxRequestsPerAddress]).toEqual([64, 32]);

  const engine = await openTestEngine();
  cleanups.push(() => engine.close());
  const limits: ClientLimits = {
    headersTimeoutMs: 20_000,
    bodyIdleMs: 30_000,
    bodyMinBytesPerSecond: 1,
    maxBodyBytes: 1_000_000,
    maxConnections: 40,
    perAddress: { connections: 8, requests: 4 },
  };
  const app = await buildApp(apiDeps(engine), silentLogger(), limits);
  cleanups.push(() => app.close());
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as net.AddressInfo;

  // Connections that send nothing: eight are kept, the others closed as soon as they are accepted.
  const idle: net.Socket[] = [];
  for (let i = 0; i < 20; i++) idle.push(net.connect({ host: '127.0.0.1', port, localAddress: '127.0.0.1' }).on('error', () => undefined));
  await new Promise((resolve) => setTimeout(resolve, 500));
  expect(idle.filter((s) => !s.destroyed && !s.closed).length).toBe(8);
  idle.forEach((s) => s.destroy());
  await new Promise((resolve) => setTimeout(resolve, 200));

  // Half-sent requests: four in flight, every one past them 429 and closed.
  const flood: Awaited<ReturnType<typeof halfSent>>[] = [];
  for (let i = 0; i < 50; i++) flood.push(await halfSent(port));
  cleanups.push(async () => flood.forEach((f) => f.socket.destroy()));
  await new Promise((resolve) => setTimeout(resolve, 500));
  const waiting = flood.filter((f) => !f.closed() && f.answer() === '');
  const refused = flood.filter((f) => f.answer().startsWith('HTTP/1.1 429'));
  expect(waiting.length).toBe(4);
  expect(refused.length).toBe(46);
  expect(refused[0]!.answer()).toContain('too_many_in_flight');

  // Meanwhile another address is answered at once.
  const other = await healthzFrom('127.0.0.2', port);
  expect(other.status).toBe(200);
  expect(other.ms).toBeLessThan(1000);
});
