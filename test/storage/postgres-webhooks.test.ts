import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import type { AttemptRecord, Delivery } from '../../src/storage/records.js';
import { PgBilling } from '../../src/storage/postgres/pg-billing.js';
import { addToOutbox } from '../../src/storage/postgres/pg-core-outbox.js';
import type { PgDatabase } from '../../src/storage/postgres/pg-database.js';
import { PgDeliveries } from '../../src/storage/postgres/pg-deliveries.js';
import { PgIdempotency } from '../../src/storage/postgres/pg-idempotency.js';
import { PgKeys } from '../../src/storage/postgres/pg-keys.js';
import { PgWebhooks } from '../../src/storage/postgres/pg-webhooks.js';
import { poolScope, postgresServerUrl } from '../support/postgres-database.js';
import { BillingKeys } from '../../src/storage/billing-key.js';
import { TEST_SEAL_KEY } from '../support/test-engine.js';

const NOW = 1_700_000_000_000;
const CLAIM_MS = 30_000;
const STALE_MS = 15 * 60_000;
const KEEP_MS = 24 * 3_600_000;

/** One process's view of the database: its own pool, as a second machine would have. */
interface Peer {
  db: PgDatabase;
  webhooks: PgWebhooks;
  deliveries: PgDeliveries;
  idempotency: PgIdempotency;
  keys: PgKeys;
  billing: PgBilling;
}

const scope = poolScope();
const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end()));
  await scope.closeAll();
});

/** A migrated database of the test's own, and `count` independent pools on it. */
async function openPeers(count: number): Promise<{ url: string; peers: Peer[] }> {
  const { url, pools } = await scope.open('pg_webhooks', count);
  const peers = pools.map((db) => ({
    db,
    webhooks: new PgWebhooks(db),
    deliveries: new PgDeliveries(db),
    idempotency: new PgIdempotency(db),
    keys: new PgKeys(db),
    billing: new PgBilling(db, new BillingKeys(Buffer.from(TEST_SEAL_KEY, 'base64'))),
  }));
  return { url, peers };
}

async function subscribe(p: Peer, accountId: string, id: string, events: string[], isActive = true): Promise<void> {
  await p.webhooks.insert({
    id,
    accountId,
    kind: 'generic',
    url: `https://hooks.example.com/${id}`,
    events,
    description: '',
    isActive,
    secretSealed: 'sealed',
    telegramChat: null,
    telegramTokenSealed: null,
    now: NOW,
  });
}

async function queueEvents(p: Peer, accountId: string, count: number, event = 'bulk.completed'): Promise<string[]> {
  const ids = Array.from({ length: count }, (_, i) => `evt_${String(i).padStart(4, '0')}`);
  await p.db.transaction(async (tx) => {
    for (const [i, id] of ids.entries()) await addToOutbox(tx, { id, event, accountId, payload: { n: i } }, NOW + i);
  });
  return ids;
}

const attempt = (over: Partial<AttemptRecord> = {}): AttemptRecord => ({
  status: 'success',
  payload: { sent: true },
  responseStatus: 200,
  responseBody: 'ok',
  errorCode: null,
  nextAttemptAt: null,
  at: NOW + 1,
  ...over,
});

describe.skipIf(!postgresServerUrl())('PostgreSQL webhooks, deliveries, keys and idempotency', () => {
  it('two relays at once, from two pools, make each delivery exactly once and mark every event sent', async () => {
    const { peers } = await openPeers(2);
    const [a, b] = peers as [Peer, Peer];
    await subscribe(a, 'acc_1', 'wh_1', ['bulk.completed']);
    await subscribe(a, 'acc_1', 'wh_2', ['bulk.completed', 'lookup.completed']);
    await subscribe(a, 'acc_1', 'wh_off', ['bulk.completed'], false);
    await subscribe(a, 'acc_1', 'wh_other_event', ['lookup.completed']);
    const events = await queueEvents(a, 'acc_1', 300);

    const relayed: number[] = [];
    const relayUntilEmpty = async (p: Peer) => {
      for (;;) {
        const n = await p.deliveries.relayOutbox(NOW + 1000, 7);
        relayed.push(n);
        if (n === 0) return;
      }
    };
    await Promise.all([relayUntilEmpty(a), relayUntilEmpty(b), relayUntilEmpty(a), relayUntilEmpty(b)]);

    expect(relayed.reduce((x, y) => x + y, 0)).toBe(events.length);
    const { rows } = await a.db.query<{ webhook_id: string; n: number; events: number }>(
      'SELECT webhook_id, count(*)::int AS n, count(DISTINCT message_id)::int AS events FROM webhook_deliveries GROUP BY webhook_id ORDER BY webhook_id',
    );
    expect(rows).toEqual([
      { webhook_id: 'wh_1', n: 300, events: 300 },
      { webhook_id: 'wh_2', n: 300, events: 300 },
    ]);
    const unsent = await a.db.query('SELECT 1 FROM outbox WHERE sent_at IS NULL');
    expect(unsent.rowCount).toBe(0);
  });

  it('a relay passes over events another relay holds instead of waiting for it, and relays them once it is gone', async () => {
    const { url, peers } = await openPeers(1);
    const [a] = peers as [Peer];
    await subscribe(a, 'acc_1', 'wh_1', ['bulk.completed']);
    await queueEvents(a, 'acc_1', 3);
    const holder = new pg.Client({ connectionString: url });
    clients.push(holder);
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query("SELECT id FROM outbox WHERE id IN ('evt_0000', 'evt_0001') FOR UPDATE");

    expect(await a.deliveries.relayOutbox(NOW + 1000)).toBe(1);
    expect((await a.deliveries.list('wh_1', 10)).map((d) => d.messageId)).toEqual(['evt_0002']);
    await holder.query('ROLLBACK');
    expect(await a.deliveries.relayOutbox(NOW + 1000)).toBe(2);
    expect((await a.deliveries.list('wh_1', 10)).map((d) => d.messageId).sort()).toEqual(['evt_0000', 'evt_0001', 'evt_0002']);
  });

  it('two senders claiming at once never claim one delivery, and between them claim every due one', async () => {
    const { peers } = await openPeers(2);
    const [a, b] = peers as [Peer, Peer];
    await subscribe(a, 'acc_1', 'wh_1', ['bulk.completed']);
    await subscribe(a, 'acc_1', 'wh_2', ['bulk.completed']);
    await queueEvents(a, 'acc_1', 100);
    expect(await a.deliveries.relayOutbox(NOW, 1000)).toBe(100);

    const claims = await Promise.all(
      Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? a : b).deliveries.claimDue(`sender_${i}`, NOW + 10, CLAIM_MS, 20)),
    );
    const claimed = claims.flat().map((d) => d.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.length).toBe(200);
    const owners = await a.db.query<{ n: number }>('SELECT count(DISTINCT claimed_by)::int AS n FROM webhook_deliveries');
    expect(owners.rows[0]!.n).toBeGreaterThan(1);
    expect(await b.deliveries.claimDue('late', NOW + 20, CLAIM_MS, 20)).toEqual([]);
  });

  it('capped claims racing from two pools never take an account past its cap of live claims, and one more claim fills every cap', async () => {
    const { peers } = await openPeers(2);
    const [a, b] = peers as [Peer, Peer];
    const accounts = ['acc_1', 'acc_2', 'acc_3'];
    for (const account of accounts) {
      for (let i = 0; i < 2; i++) await subscribe(a, account, `wh_${account}_${i}`, ['bulk.completed']);
      await a.db.transaction(async (tx) => {
        for (let i = 0; i < 30; i++) await addToOutbox(tx, { id: `evt_${account}_${i}`, event: 'bulk.completed', accountId: account, payload: { n: i } }, NOW + i);
      });
    }
    expect(await a.deliveries.relayOutbox(NOW + 100, 1000)).toBe(90);

    const live = async () =>
      (
        await a.db.query<{ account: string; n: number }>(
          `SELECT w.account_id AS account, count(*)::int AS n FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
            WHERE d.claimed_until >= $1 GROUP BY w.account_id ORDER BY w.account_id`,
          [NOW + 200],
        )
      ).rows;
    for (let round = 0; round < 3; round++) {
      const claims = await Promise.all(
        Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).deliveries.claimDue(`sender_${round}_${i}`, NOW + 200, CLAIM_MS, 3, 4)),
      );
      const claimed = claims.flat().map((d) => d.id);
      expect(new Set(claimed).size).toBe(claimed.length);
      for (const { n } of await live()) expect(n).toBeLessThanOrEqual(4);
    }
    // A claimer passed over an account that another was claiming; one more claim fills every cap.
    await a.deliveries.claimDue('sender_last', NOW + 200, CLAIM_MS, 12, 4);
    expect(await live()).toEqual(accounts.map((account) => ({ account, n: 4 })));
  });

  it('a capped claim passes over an account another claimer is claiming, so a snapshot taken before that commits cannot pass the cap', async () => {
    const { url, peers } = await openPeers(1);
    const [p] = peers as [Peer];
    await subscribe(p, 'acc_1', 'wh_a', ['bulk.completed']);
    await subscribe(p, 'acc_1', 'wh_p', ['bulk.completed']);
    await queueEvents(p, 'acc_1', 4);
    await p.deliveries.relayOutbox(NOW, 100);
    const paused = { url: 'https://hooks.example.com/wh_p', events: ['bulk.completed'], description: '' };
    await p.webhooks.update('wh_p', { ...paused, isActive: false }, NOW);
    expect(await p.deliveries.claimDue('sender_z', NOW + 10, CLAIM_MS, 2, 4)).toHaveLength(2);

    // Another sender mid-claim, as claimDue does it: the account's claim lock held, two more claimed, not yet committed.
    const holder = new pg.Client({ connectionString: url });
    clients.push(holder);
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query("SELECT pg_advisory_xact_lock(hashtext('sluice.claims:' || 'acc_1'))");
    await holder.query(
      `UPDATE webhook_deliveries SET claimed_by = 'sender_h', claimed_until = $1
        WHERE id IN (SELECT id FROM webhook_deliveries WHERE webhook_id = 'wh_a' AND claimed_by IS NULL)`,
      [NOW + 10 + CLAIM_MS],
    );
    // Resumed meanwhile: its older deliveries come first in a snapshot that still counts two live claims.
    await p.webhooks.update('wh_p', { ...paused, isActive: true }, NOW);
    expect(await p.deliveries.claimDue('sender_y', NOW + 20, CLAIM_MS, 10, 4)).toEqual([]);
    await holder.query('COMMIT');
    expect(await p.deliveries.claimDue('sender_y', NOW + 30, CLAIM_MS, 10, 4)).toEqual([]);
    const { rows } = await p.db.query<{ n: number }>('SELECT count(*)::int AS n FROM webhook_deliveries WHERE claimed_until >= $1', [NOW + 30]);
    expect(rows[0]!.n).toBe(4);
  });

  it('refuses the attempt of a sender whose claim another has taken over, and of one whose delivery is finished', async () => {
    const { peers } = await openPeers(1);
    const [p] = peers as [Peer];
    await subscribe(p, 'acc_1', 'wh_1', ['bulk.completed']);
    await queueEvents(p, 'acc_1', 1);
    await p.deliveries.relayOutbox(NOW);
    const [first] = await p.deliveries.claimDue('sender_a', NOW, CLAIM_MS, 10);
    expect(first).toMatchObject({ messageId: 'evt_0000', status: 'pending', attempts: 0, payload: { n: 0 } });

    // Sender A stalls past its claim; B claims the delivery and sends it.
    const [retaken] = await p.deliveries.claimDue('sender_b', NOW + CLAIM_MS + 1, CLAIM_MS, 10);
    expect(retaken?.id).toBe(first!.id);
    expect(await p.deliveries.recordAttempt(first!.id, 'sender_a', attempt({ status: 'failed', responseStatus: 500 }))).toBe(false);
    expect(await p.deliveries.recordAttempt(first!.id, 'sender_b', attempt())).toBe(true);
    expect(await p.deliveries.get(first!.id)).toMatchObject({ status: 'success', attempts: 1, responseStatus: 200, payload: { sent: true } });
    // Finished: not claimable, and a second record of the same claim is refused too.
    expect(await p.deliveries.recordAttempt(first!.id, 'sender_b', attempt())).toBe(false);
    expect(await p.deliveries.claimDue('sender_c', NOW + 10 * CLAIM_MS, CLAIM_MS, 10)).toEqual([]);
  });

  it('lists the deliveries of one millisecond latest insert first, as SQLite does by rowid', async () => {
    const { peers } = await openPeers(1);
    const [p] = peers as [Peer];
    await subscribe(p, 'acc_1', 'wh_1', ['bulk.completed']);
    const made: Delivery[] = [];
    // Ids that sort against insertion order, so that neither id nor heap order can pass for `seq`.
    for (const id of ['msg_c', 'msg_b', 'msg_a']) made.push(await p.deliveries.recordTest('wh_1', id, attempt({ at: NOW })));
    made.push(await p.deliveries.recordTest('wh_1', 'msg_z', attempt({ at: NOW - 1 })));
    expect((await p.deliveries.list('wh_1', 10)).map((d) => d.messageId)).toEqual(['msg_a', 'msg_b', 'msg_c', 'msg_z']);
    expect((await p.deliveries.list('wh_1', 2)).map((d) => d.messageId)).toEqual(['msg_a', 'msg_b']);
    expect(made[0]).toMatchObject({ eventType: 'test', status: 'success', attempts: 1, lastAttemptAt: NOW, createdAt: NOW, nextAttemptAt: null });
  });

  it('many requests claiming one idempotency key at once, from two pools, get `new` exactly once', async () => {
    const { peers } = await openPeers(2);
    const [a, b] = peers as [Peer, Peer];
    for (let round = 0; round < 5; round++) {
      const key = `idem_${round}`;
      const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).idempotency.claim('acc_1', key, NOW, STALE_MS, KEEP_MS)));
      expect(claims.filter((c) => c.state === 'new')).toHaveLength(1);
      expect(claims.filter((c) => c.state === 'in_flight')).toHaveLength(11);
    }
  });

  it('a stale claim is taken over by exactly one of the requests that find it at once', async () => {
    const { peers } = await openPeers(2);
    const [a, b] = peers as [Peer, Peer];
    expect(await a.idempotency.claim('acc_1', 'idem', NOW, STALE_MS, KEEP_MS)).toEqual({ state: 'new' });
    const later = NOW + STALE_MS + 1;
    const claims = await Promise.all(Array.from({ length: 12 }, (_, i) => (i % 2 === 0 ? a : b).idempotency.claim('acc_1', 'idem', later, STALE_MS, KEEP_MS)));
    expect(claims.filter((c) => c.state === 'new')).toHaveLength(1);
    await a.idempotency.finish('acc_1', 'idem', 'fp', 'job_1');
    expect(await b.idempotency.claim('acc_1', 'idem', later + 1, STALE_MS, KEEP_MS)).toEqual({ state: 'done', jobId: 'job_1', fingerprint: 'fp' });
  });

  it("finds a key by hash with its account's status as it is now", async () => {
    const { peers } = await openPeers(1);
    const [p] = peers as [Peer];
    await p.billing.createAccount({ id: 'acc_1', credits: 10, now: NOW });
    await p.keys.insert({ id: 'key_1', accountId: 'acc_1', name: 'ci', keyPrefix: 'sluice_abcdef', role: 'tech', keyHash: 'hash_1', sealed: 'sealed', revealUntil: NOW + 60_000, now: NOW });
    expect(await p.keys.byHash('hash_1')).toEqual({
      id: 'key_1',
      accountId: 'acc_1',
      name: 'ci',
      keyPrefix: 'sluice_abcdef',
      role: 'tech',
      isActive: true,
      revokedAt: null,
      createdAt: NOW,
      keyHash: 'hash_1',
      sealed: 'sealed',
      revealUntil: NOW + 60_000,
      expiresAt: null,
      replacedBy: null,
      accountStatus: 'active',
    });
    await p.billing.setStatus('acc_1', 'suspended');
    expect(await p.keys.byHash('hash_1')).toMatchObject({ id: 'key_1', accountStatus: 'suspended' });
    expect(await p.keys.byHash('hash_unknown')).toBeUndefined();
  });
});
