import net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { partHead } from '../support/api-harness.js';
import { cliAccountWithKey, startServe, type ServeChild } from '../support/api-serve.js';
import { killChildren } from '../support/cli-process.js';
import { tempDir } from '../support/test-engine.js';

/** One second for headers, one second of silence in a body, and a body rate of 1,000 bytes a second. */
const ENV = {
  SLUICE_HEADERS_TIMEOUT_SECONDS: '1',
  SLUICE_BODY_IDLE_SECONDS: '1',
  SLUICE_BODY_MIN_BYTES_PER_SECOND: '1000',
  SLUICE_MAX_CONNECTIONS: '3',
};
/**
 * Every limit above is 1 s and is checked every 250 ms; the defaults it replaces were 60 s for
 * headers and none for bodies, so a client still connected after this long was not timed out.
 */
const CLOSED_WITHIN_MS = 4_000;
/** Each trickle would take longer than CLOSED_WITHIN_MS to finish, so only the server can end it. */
const TRICKLE_EVERY_MS = 300;

interface RawClient {
  readonly socket: net.Socket;
  received(): string;
  isClosed(): boolean;
  /** Resolves true when the server closes the connection within `ms`, false if it is still open then. */
  closedWithin(ms: number): Promise<boolean>;
}

const clients: net.Socket[] = [];

async function connect(baseUrl: string): Promise<RawClient> {
  const socket = net.connect(Number(new URL(baseUrl).port), '127.0.0.1');
  clients.push(socket);
  let received = '';
  let closed = false;
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  // A reset is one of the ways a server closes; the tests look at what arrived, not at the error.
  socket.on('error', () => undefined);
  const whenClosed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  void whenClosed.then(() => (closed = true));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  return {
    socket,
    received: () => received,
    isClosed: () => closed,
    closedWithin: async (ms) => {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
      const result = await Promise.race([whenClosed.then(() => true as const), late]);
      clearTimeout(timer);
      return result;
    },
  };
}

/** Writes `text` one byte every TRICKLE_EVERY_MS for as long as the connection stays open. */
function trickle(client: RawClient, text: string): void {
  let at = 0;
  const timer = setInterval(() => {
    if (client.isClosed() || at >= text.length) return clearInterval(timer);
    client.socket.write(text[at++]!);
  }, TRICKLE_EVERY_MS);
  client.socket.once('close', () => clearInterval(timer));
}

let server: ServeChild;
let key: string;

beforeAll(async () => {
  const dataDir = tempDir('sluice-slow-clients-');
  ({ key } = await cliAccountWithKey(dataDir, 1000, ENV));
  server = await startServe(dataDir, ENV, ['--no-worker']);
});

// A connection left open by a failed case would count against SLUICE_MAX_CONNECTIONS in the next.
afterEach(async () => {
  for (const socket of clients.splice(0)) socket.destroy();
  await new Promise((r) => setTimeout(r, 100));
});

afterAll(killChildren);

function uploadHead(boundary: string, contentLength: number): string {
  return [
    'POST /api/jobs/bulk HTTP/1.1',
    'Host: 127.0.0.1',
    `Authorization: Bearer ${key}`,
    `Content-Type: multipart/form-data; boundary=${boundary}`,
    `Content-Length: ${contentLength}`,
    'Connection: close',
    '',
    '',
  ].join('\r\n');
}

describe('sluice serve against slow clients, over real sockets', () => {
  it('closes with 408 a connection that sends its headers one byte at a time, and one that sends nothing', async () => {
    const slow = await connect(server.baseUrl);
    const silent = await connect(server.baseUrl);
    slow.socket.write('POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    trickle(slow, `X-Padding: ${'a'.repeat(100)}\r\n\r\n`);

    expect(await slow.closedWithin(CLOSED_WITHIN_MS)).toBe(true);
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
    expect(await silent.closedWithin(CLOSED_WITHIN_MS)).toBe(true);
    expect(silent.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes with 408 an unauthenticated login whose body arrives one byte every 300 ms, below the minimum rate', async () => {
    const body = JSON.stringify({ email: 'victim@example.com', password: 'not-the-password' });
    const client = await connect(server.baseUrl);
    client.socket.write(`POST /api/auth/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
    trickle(client, body);

    expect(await client.closedWithin(CLOSED_WITHIN_MS)).toBe(true);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('closes with 408 an upload that sends part of its file and then stalls', async () => {
    const boundary = 'stalled';
    const start = `${partHead(boundary, { name: 'type' })}gender\r\n${partHead(boundary, { name: 'file', filename: 'in.csv' })}email\n${'maria.rossi@example.com\n'.repeat(400)}`;
    const client = await connect(server.baseUrl);
    // It promises far more than it sends: the rest never comes.
    client.socket.write(uploadHead(boundary, start.length + 1_000_000) + start);

    expect(await client.closedWithin(CLOSED_WITHIN_MS)).toBe(true);
    expect(client.received()).toMatch(/^HTTP\/1\.1 408 /);
  });

  it('accepts (202) an upload that arrives steadily for longer than the idle limit, above the minimum rate', async () => {
    const boundary = 'steady';
    const rows = Array.from({ length: 600 }, (_, i) => `user${i}@example.com\n`).join('');
    const body = Buffer.from(`${partHead(boundary, { name: 'type' })}gender\r\n${partHead(boundary, { name: 'file', filename: 'in.csv' })}email\n${rows}\r\n--${boundary}--\r\n`);
    const client = await connect(server.baseUrl);
    client.socket.write(uploadHead(boundary, body.length));
    // 1,000 bytes every 250 ms: 4,000 bytes a second, for about three seconds (three idle limits).
    const chunk = 1000;
    for (let at = 0; at < body.length; at += chunk) {
      client.socket.write(body.subarray(at, at + chunk));
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(body.length / chunk).toBeGreaterThan(10);

    expect(await client.closedWithin(10_000)).toBe(true);
    expect(client.received()).toMatch(/^HTTP\/1\.1 202 /);
  });

  it('closes at once, without an answer, a connection beyond SLUICE_MAX_CONNECTIONS, and serves again once connections free up', async () => {
    const held = await Promise.all([1, 2, 3].map(() => connect(server.baseUrl)));
    for (const client of held) client.socket.write('GET /healthz HTTP/1.1\r\n');
    // Let the server accept the three before the fourth knocks.
    await new Promise((r) => setTimeout(r, 100));
    const extra = await connect(server.baseUrl);

    expect(await extra.closedWithin(CLOSED_WITHIN_MS)).toBe(true);
    expect(extra.received()).toBe('');
    // Refused for the count, not timed out: the three it let in were still open.
    expect(held.map((c) => c.isClosed())).toEqual([false, false, false]);

    for (const client of held) expect(await client.closedWithin(CLOSED_WITHIN_MS)).toBe(true);
    const after = await connect(server.baseUrl);
    after.socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
    expect(await after.closedWithin(CLOSED_WITHIN_MS)).toBe(true);
    expect(after.received()).toMatch(/^HTTP\/1\.1 200 /);
  });
});
