import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  body: Buffer;
  headers: Record<string, string | undefined>;
}

/**
 * The demo's own webhook receiver on loopback: it keeps the raw bytes of each delivery, because
 * signatures are checked over those and not over re-serialised JSON.
 */
export async function startDemoReceiver(): Promise<{ url: string; next: () => Promise<ReceivedWebhook>; close: () => Promise<void> }> {
  const waiting: Array<(w: ReceivedWebhook) => void> = [];
  const received: ReceivedWebhook[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const headers = Object.fromEntries(Object.entries(req.headers).map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v]));
      const webhook = { body: Buffer.concat(chunks), headers };
      const resolve = waiting.shift();
      if (resolve) resolve(webhook);
      else received.push(webhook);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/sluice-events`,
    next: () => {
      const ready = received.shift();
      return ready ? Promise.resolve(ready) : new Promise((resolve) => waiting.push(resolve));
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
