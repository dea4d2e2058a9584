import { createHmac } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import https from 'node:https';
import os from 'node:os';
import { generate } from 'selfsigned';
import { Webhook } from 'standardwebhooks';

export interface TestCertificate { cert: string; key: string }

let certificate: Promise<TestCertificate> | undefined;

/** One certificate per test process: generation is slow enough to notice when every test pays for it. */
export function testCertificate(): Promise<TestCertificate> {
  certificate ??= (async () => {
    const notBeforeDate = new Date(Date.now() - 24 * 3600_000);
    const pems = await generate([{ name: 'commonName', value: 'localhost' }], {
      keyType: 'ec',
      algorithm: 'sha256',
      notBeforeDate,
      notAfterDate: new Date(notBeforeDate.getTime() + 30 * 24 * 3600_000),
      extensions: [
        // cA lets the same PEM serve as a trust anchor in `ca` and NODE_EXTRA_CA_CERTS.
        { name: 'basicConstraints', cA: true },
        { name: 'keyUsage', digitalSignature: true, keyCertSign: true },
        { name: 'extKeyUsage', serverAuth: true },
        { name: 'subjectAltName', altNames: [{ type: 2, value: 'localhost' }, { type: 7, ip: '127.0.0.1' }, { type: 7, ip: '::1' }] },
      ],
    });
    return { cert: pems.cert, key: pems.private };
  })();
  return certificate;
}

export interface ReceivedRequest {
  method: string;
  /** Path and query string, as sent. */
  path: string;
  /** Lower-cased names; repeated headers joined with ', '. */
  headers: Record<string, string>;
  rawBody: Buffer;
  /** Parsed from rawBody, or undefined when the body is not JSON. */
  json: unknown;
  receivedAt: number;
}

export type Answer =
  | { status: number; body?: string; headers?: Record<string, string> }
  | { hang: true }
  | { destroy: true };

/** What the receiver answers to the n-th request (0-based). */
export type Behaviour = (n: number, request: ReceivedRequest) => Answer | Promise<Answer>;

export interface Receiver {
  url: string;
  ca: string;
  caFile: string;
  requests: ReceivedRequest[];
  /** Resolves when at least n requests have arrived; rejects after timeoutMs saying how many did. */
  waitFor(n: number, timeoutMs?: number): Promise<ReceivedRequest[]>;
  /** Distinct `webhook-id` values in arrival order. */
  messageIds(): string[];
  /** Also destroys hanging sockets and removes caFile. */
  close(): Promise<void>;
}

type Server = http.Server | https.Server;

export async function startReceiver(
  options: { behaviour?: Behaviour; protocol?: 'https' | 'http'; host?: string } = {},
): Promise<Receiver> {
  const { behaviour = () => ({ status: 200, body: 'ok' }), protocol = 'https', host = '127.0.0.1' } = options;
  const { cert, key } = await testCertificate();
  const dir = fs.mkdtempSync(`${os.tmpdir()}/webhook-receiver-`);
  const caFile = `${dir}/ca.pem`;
  fs.writeFileSync(caFile, cert);
  const requests: ReceivedRequest[] = [];
  const arrivals = counter(() => requests.length, 'requests');

  const handler: http.RequestListener = async (req, res) => {
    const rawBody = await readBody(req);
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) headers[name] = Array.isArray(value) ? value.join(', ') : (value ?? '');
    const request: ReceivedRequest = { method: req.method ?? '', path: req.url ?? '', headers, rawBody, json: parseJson(rawBody), receivedAt: Date.now() };
    const n = requests.push(request) - 1;
    arrivals.notify();
    let answer: Answer;
    try {
      answer = await behaviour(n, request);
    } catch (e: unknown) {
      answer = { status: 500, body: `behaviour threw: ${String(e)}` };
    }
    if ('hang' in answer) return;
    if ('destroy' in answer) return void req.socket.destroy();
    res.writeHead(answer.status, answer.headers).end(answer.body ?? '');
  };
  const server = protocol === 'https' ? https.createServer({ cert, key }, handler) : http.createServer(handler);
  const { port, close } = await listen(server, host);
  return {
    url: `${protocol}://${host.includes(':') ? `[${host}]` : host}:${port}/hook`,
    ca: cert,
    caFile,
    requests,
    waitFor: async (n, timeoutMs) => (await arrivals.waitFor(n, timeoutMs), requests),
    messageIds: () => [...new Set(requests.flatMap((r) => r.headers['webhook-id'] ?? []))],
    close: async () => {
      await close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Verifies a delivery as a receiver would; returns the problems found (empty = valid). */
export function verifyDelivery(request: ReceivedRequest, secret: string): string[] {
  const problems: string[] = [];
  const expected = `sha256=${createHmac('sha256', Buffer.from(secret, 'utf8')).update(request.rawBody).digest('hex')}`;
  const signature = request.headers['x-sluice-signature'];
  if (signature === undefined) problems.push('X-Sluice-Signature is missing');
  else if (signature !== expected) problems.push('X-Sluice-Signature does not match the HMAC-SHA256 of the raw body');
  try {
    new Webhook(secret).verify(request.rawBody.toString('utf8'), request.headers);
  } catch (e: unknown) {
    problems.push(`Standard Webhooks verification failed: ${e instanceof Error ? e.message : String(e)}`);
  }
  const event = typeof request.json === 'object' && request.json !== null ? (request.json as Record<string, unknown>).event : undefined;
  const header = request.headers['x-sluice-event'];
  if (header === undefined) problems.push('X-Sluice-Event is missing');
  else if (header !== event) problems.push(`X-Sluice-Event ${header} differs from the body's event ${String(event)}`);
  return problems;
}

export interface TelegramStandIn {
  /** http://127.0.0.1:PORT, without a trailing slash. */
  baseUrl: string;
  /** Every well-formed sendMessage call, including those answered with a failing status. */
  messages: Array<{ token: string; chatId: string; text: string }>;
  waitFor(n: number, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

/** A stand-in for https://api.telegram.org that records POST /bot<token>/sendMessage. */
export async function startTelegramStandIn(options: { status?: number } = {}): Promise<TelegramStandIn> {
  const status = options.status ?? 200;
  const messages: TelegramStandIn['messages'] = [];
  const arrivals = counter(() => messages.length, 'messages');
  const server = http.createServer(async (req, res) => {
    const body = parseJson(await readBody(req)) as { chat_id?: unknown; text?: unknown } | undefined;
    const token = /^\/bot([^/]+)\/sendMessage$/.exec(req.url ?? '')?.[1];
    const reply = (code: number, payload: unknown) =>
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(payload));
    if (req.method !== 'POST' || token === undefined || body?.chat_id === undefined || typeof body.text !== 'string') {
      return reply(404, { ok: false, error_code: 404, description: 'Not Found' });
    }
    messages.push({ token, chatId: String(body.chat_id), text: body.text });
    arrivals.notify();
    if (status !== 200) return reply(status, { ok: false, error_code: status, description: http.STATUS_CODES[status] ?? 'Error' });
    reply(200, { ok: true, result: { message_id: messages.length } });
  });
  const { port, close } = await listen(server, '127.0.0.1');
  return { baseUrl: `http://127.0.0.1:${port}`, messages, waitFor: (n, timeoutMs) => arrivals.waitFor(n, timeoutMs), close };
}

async function readBody(req: http.IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer): unknown {
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch {
    return undefined;
  }
}

function counter(count: () => number, noun: string) {
  const waiters = new Set<{ n: number; resolve: () => void }>();
  return {
    notify(): void {
      for (const w of waiters) if (count() >= w.n) (waiters.delete(w), w.resolve());
    },
    waitFor(n: number, timeoutMs = 10_000): Promise<void> {
      if (count() >= n) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => {
          waiters.delete(waiter);
          reject(new Error(`expected ${n} ${noun} within ${timeoutMs} ms, but ${count()} arrived`));
        }, timeoutMs);
        const waiter = { n, resolve: () => (clearTimeout(timer), resolve()) };
        waiters.add(waiter);
      });
    },
  };
}

/** Listens on port 0; close() destroys open sockets so a hanging request cannot hold a test run open. */
async function listen(server: Server, host: string): Promise<{ port: number; close: () => Promise<void> }> {
  const sockets = new Set<{ destroy(): void }>();
  server.on('connection', (socket) => (sockets.add(socket), socket.once('close', () => sockets.delete(socket))));
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(0, host, resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`unexpected server address ${String(address)}`);
  const close = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    for (const socket of sockets) socket.destroy();
    await closed;
  };
  return { port: address.port, close };
}
