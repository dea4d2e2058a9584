import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, listen, multipart, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { STORE_KINDS } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';

/** Targets in the flooding account's list, watched by two monitors: enough that one grouped read takes far longer than 100 ms unbounded. */
const TARGETS = 150_000;
const FLOOD_MS = 4_000;
const FLOODERS = 6;

async function bigList(h: ApiHarness, key: string): Promise<string> {
  const csv = `email\n${Array.from({ length: TARGETS }, (_, i) => `user${i}@example.com`).join('\n')}\n`;
  const form = multipart([{ name: 'name', value: 'big' }, { name: 'type', value: 'email' }, { name: 'file', value: csv, filename: 'big.csv', contentType: 'text/csv' }]);
  const list = await h.app.inject({ method: 'POST', url: '/api/lists', headers: { ...bearer(key), ...form.headers }, payload: form.payload });
  expect(list.statusCode, list.body).toBe(201);
  return json(list).id as string;
}

function p99(samples: number[]): number {
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(sorted.length * 0.99) - 1)]!;
}

/**
 * Issue 27, finding 2: an account with no credits built a huge list and two free monitors on it,
 * then flooded its heaviest read; another account's `GET /api/account` went from 5 ms to 12.7 s.
 * Over a real socket, as the audit did: the other account's requests stay under 100 ms at p99.
 */
// SQLite only: there one process's event loop ran the reads, which is what stalled everyone. On
// PostgreSQL the reads never hold the loop; what is left is the database server's CPU, which on
// this shared test machine measured 139 ms at p99 (950 ms before a heavy read held one pooled
// connection instead of two): docs/security.md says so, and it is not claimed here.
describe.each(TEST_STORES.filter((k) => k === STORE_KINDS.sqlite))('a flood of heavy reads on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('leaves another account under 100 ms at p99; the flooder waits for its two slots, and past eight waiting gets 429', async () => {
    // The quota on targets per list (issue 27, finding 3) would refuse the list before any flood; the
    // flood is the attack of an account whose quota was raised.
    const h = await openStoreHarness(kind, { SLUICE_RATE_LIMIT_PER_MINUTE: '100000', SLUICE_QUOTA_TARGETS_PER_LIST: '1000000' });
    const flooder = await newAccount(h, { credits: 0 });
    const other = await newAccount(h, { credits: 10 });
    const listId = await bigList(h, flooder.key);
    for (const name of ['a', 'b']) {
      const m = await h.app.inject({ method: 'POST', url: '/api/monitors', headers: bearer(flooder.key), payload: { name, type: 'email', frequency: 'weekly', list_id: listId, start_at: '2099-01-01T00:00:00Z' } });
      expect(m.statusCode, m.body).toBe(201);
    }
    const base = await listen(h);

    // Settle first: the list's import left a large WAL, whose checkpoint stalls whichever write comes next.
    for (let i = 0; i < 20; i++) await fetch(`${base}/api/account`, { headers: bearer(other.key) }).then((r) => r.arrayBuffer());

    const statuses = new Map<number, number>();
    const until = Date.now() + FLOOD_MS;
    const flood = async (i: number) => {
      for (let n = 0; Date.now() < until; n++) {
        const r = await fetch(`${base}/api/monitoring/targets?offset=${(i * 7919 + n * 104_729) % TARGETS}`, { headers: bearer(flooder.key) });
        await r.arrayBuffer();
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      }
    };
    const latencies: number[] = [];
    const probe = async () => {
      while (Date.now() < until) {
        const started = performance.now();
        const r = await fetch(`${base}/api/account`, { headers: bearer(other.key) });
        await r.arrayBuffer();
        latencies.push(performance.now() - started);
        expect(r.status).toBe(200);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    };
    await Promise.all([...Array.from({ length: FLOODERS }, (_, i) => flood(i)), probe()]);

    expect(statuses.get(200) ?? 0, 'the flooder is still served').toBeGreaterThan(0);
    expect(statuses.get(429) ?? 0, 'within its bound the flooder waits rather than spins').toBe(0);
    expect(latencies.length).toBeGreaterThan(20);
    expect(p99(latencies), `p99 of ${latencies.length} requests`).toBeLessThan(100);

    // Two in flight and eight waiting: a burst of twelve has two refused at once.
    const burst = await Promise.all(Array.from({ length: 12 }, () => fetch(`${base}/api/monitoring/targets`, { headers: bearer(flooder.key) }).then(async (r) => {
      await r.arrayBuffer();
      return { status: r.status, retryAfter: r.headers.get('retry-after') };
    })));
    expect(burst.filter((r) => r.status === 429)).toEqual([{ status: 429, retryAfter: '1' }, { status: 429, retryAfter: '1' }]);
    expect(burst.filter((r) => r.status === 200)).toHaveLength(10);
  }, 120_000);
});
