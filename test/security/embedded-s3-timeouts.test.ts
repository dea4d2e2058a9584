import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { S3_HEADERS_TIMEOUT_MS } from '../../src/storage/s3/embedded-s3-server.js';
import { openTestEngine, type TestEngine } from '../support/test-engine.js';

const engines: TestEngine[] = [];
afterEach(async () => {
  for (const e of engines.splice(0)) await e.close();
});

/** Resolves with the milliseconds until the server closed the socket, or Infinity after `waitMs`. */
function closedWithin(socket: net.Socket, waitMs: number): Promise<number> {
  const started = performance.now();
  return new Promise((resolve) => {
    const timer = setTimeout(() => resolve(Infinity), waitMs);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(performance.now() - started);
    });
  });
}

/**
 * Issue 27, finding 6: connections to the embedded S3 port that send nothing, or trickle their
 * headers, stayed open past 75 s. Now the headers must be in within S3_HEADERS_TIMEOUT_MS.
 */
it('the embedded S3 port closes idle and trickling connections once their headers are late', async () => {
  const engine = await openTestEngine();
  engines.push(engine);
  const port = Number(fs.readFileSync(path.join(engine.dataDir, 's3', 'port'), 'utf8'));
  const idle = net.connect({ host: '127.0.0.1', port }).on('error', () => undefined);
  const slow = net.connect({ host: '127.0.0.1', port }).on('error', () => undefined);
  slow.write('GET /sluice HTTP/1.1\r\nHost: x\r\n');
  const trickle = setInterval(() => slow.writable && slow.write('X-Slow: 1\r\n'), 1000);
  const budget = S3_HEADERS_TIMEOUT_MS + 3000;
  const [idleMs, slowMs] = await Promise.all([closedWithin(idle, budget), closedWithin(slow, budget)]);
  clearInterval(trickle);
  idle.destroy();
  slow.destroy();
  expect(idleMs).toBeLessThan(budget);
  expect(slowMs).toBeLessThan(budget);
}, 30_000);
