import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withBreakers } from '../../../src/lookups/enrich/breaker-json.js';

let server: http.Server;
let base: string;
let hits = 0;
let healthy = false;

beforeAll(async () => {
  server = http.createServer((_req, res) => {
    hits++;
    if (healthy) res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    else res.writeHead(503).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

describe('the enrich report\'s HTTP sources behind a circuit breaker per origin', () => {
  it('a registry that keeps failing is not asked again until the breaker lets a trial through', async () => {
    let now = 1_000;
    const get = withBreakers(
      async (url) => {
        const response = await fetch(url);
        if (response.status !== 200) throw new Error(`http_${response.status}`);
        return response.json();
      },
      { failureThreshold: 3, openMs: 10_000, clock: { now: () => now } },
    );
    for (let i = 0; i < 3; i++) await expect(get(`${base}/domain/a.test`)).rejects.toThrow('http_503');
    expect(hits).toBe(3);
    await expect(get(`${base}/domain/b.test`)).rejects.toThrow('breaker_open');
    expect(hits).toBe(3);
    // After openMs one trial goes out; the registry is back, so the breaker closes.
    healthy = true;
    now += 10_000;
    expect(await get(`${base}/domain/c.test`)).toEqual({ ok: true });
    expect(await get(`${base}/domain/d.test`)).toEqual({ ok: true });
    expect(hits).toBe(5);
  });
});
