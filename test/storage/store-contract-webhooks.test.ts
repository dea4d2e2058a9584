import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { AttemptRecord } from '../../src/storage/records.js';
import type { Store } from '../../src/storage/store.js';
import { TEST_STORES } from '../support/test-engine.js';
import { newAccount, newJob, NOW, openTestStore, subscribe, type TestStore } from '../support/test-store.js';

const CLAIM_MS = 30_000;

describe.each(TEST_STORES)('Store contract on %s: webhooks and deliveries', (kind) => {
  let opened: TestStore;
  let store: Store;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    store = opened.store;
  });
  afterEach(() => opened.close());

  /** A job of the account that ends (cancelled) at `at`: one bulk.completed in the outbox. */
  async function endedJob(accountId: string, id: string, at = NOW) {
    await newJob(store, accountId, id, at);
    await store.jobs.transition(id, 'cancelled', { now: at });
  }

  const attempt = (over: Partial<AttemptRecord>): AttemptRecord => ({
    status: 'success',
    payload: { sent: true },
    responseStatus: 200,
    responseBody: 'ok',
    errorCode: null,
    nextAttemptAt: null,
    at: NOW + 1,
    ...over,
  });

  describe('webhooks', () => {
    it('stores a webhook and reads it back without its secrets, which are read apart', async () => {
      await subscribe(store, 'acc_1', ['bulk.completed', 'lookup.completed'], { id: 'wh_1', description: 'mine', secretSealed: 'sealed!' });
      const row = {
        id: 'wh_1',
        accountId: 'acc_1',
        kind: 'generic',
        url: 'https://hooks.example.com/in',
        events: ['bulk.completed', 'lookup.completed'],
        description: 'mine',
        isActive: true,
        telegramChat: null,
        createdAt: NOW,
        updatedAt: NOW,
      };
      expect(await store.webhooks.get('wh_1')).toEqual(row);
      expect(await store.webhooks.sealedSecrets('wh_1')).toEqual({ secret: 'sealed!', token: null, previous: null, previousUntil: null });
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_2', kind: 'telegram', url: '', secretSealed: null, telegramChat: '-100123', telegramTokenSealed: 'sealed-token' });
      expect(await store.webhooks.get('wh_2')).toMatchObject({ kind: 'telegram', url: '', telegramChat: '-100123' });
      expect(await store.webhooks.sealedSecrets('wh_2')).toEqual({ secret: null, token: 'sealed-token', previous: null, previousUntil: null });
      expect(await store.webhooks.get('wh_missing')).toBeUndefined();
    });

    it('rotates a secret only from the one it expects, keeping the previous until its end; never a deleted webhook', async () => {
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_1', secretSealed: 's0' });
      expect(await store.webhooks.rotateSecret('wh_1', 's0', 's1', 's0-kept', NOW + 60_000, NOW + 1)).toBe(true);
      expect(await store.webhooks.sealedSecrets('wh_1')).toEqual({ secret: 's1', token: null, previous: 's0-kept', previousUntil: NOW + 60_000 });
      expect(await store.webhooks.get('wh_1')).toMatchObject({ updatedAt: NOW + 1 });
      // The loser of a race expected the secret the winner replaced.
      expect(await store.webhooks.rotateSecret('wh_1', 's0', 's2', null, null, NOW + 2)).toBe(false);
      expect(await store.webhooks.rotateSecret('wh_1', 's1', 's2', null, null, NOW + 3)).toBe(true);
      expect(await store.webhooks.sealedSecrets('wh_1')).toMatchObject({ secret: 's2', previous: null, previousUntil: null });
      expect(await store.webhooks.remove('wh_1', NOW + 4)).toBe(true);
      expect(await store.webhooks.rotateSecret('wh_1', 's2', 's3', null, null, NOW + 5)).toBe(false);
    });

    it("lists an account's webhooks oldest first (ties by id) a page at a time, and its active ones", async () => {
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_c', now: NOW + 1 });
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_b', now: NOW + 2, isActive: false });
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_a', now: NOW + 2 });
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_gone', now: NOW + 3 });
      await subscribe(store, 'acc_2', ['bulk.completed'], { id: 'wh_other', now: NOW });
      await store.webhooks.remove('wh_gone', NOW + 4);
      const page = (p: { webhooks: { id: string }[]; total: number }) => [p.webhooks.map((w) => w.id), p.total];
      expect(page(await store.webhooks.list('acc_1', 10, 0))).toEqual([['wh_c', 'wh_a', 'wh_b'], 3]);
      expect(page(await store.webhooks.list('acc_1', 1, 1))).toEqual([['wh_a'], 3]);
      expect((await store.webhooks.active('acc_1')).map((w) => w.id).sort()).toEqual(['wh_a', 'wh_c']);
    });

    it('updates a webhook that is there, and deletes it softly, once', async () => {
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_1' });
      expect(await store.webhooks.update('wh_1', { url: 'https://other.example.com/', events: ['lookup.completed'], description: 'new', isActive: false }, NOW + 5)).toBe(true);
      expect(await store.webhooks.get('wh_1')).toMatchObject({ url: 'https://other.example.com/', events: ['lookup.completed'], description: 'new', isActive: false, createdAt: NOW, updatedAt: NOW + 5 });
      expect(await store.webhooks.remove('wh_1', NOW + 6)).toBe(true);
      expect(await store.webhooks.get('wh_1')).toBeUndefined();
      expect(await store.webhooks.remove('wh_1', NOW + 7)).toBe(false);
      expect(await store.webhooks.update('wh_1', { url: 'https://x.example.com/', events: [], description: '', isActive: true }, NOW + 8)).toBe(false);
      expect(await store.webhooks.list('acc_1', 10, 0)).toEqual({ webhooks: [], total: 0 });
      expect(await store.webhooks.update('wh_missing', { url: 'https://x.example.com/', events: [], description: '', isActive: true }, NOW)).toBe(false);
    });
  });

  describe('the outbox relay', () => {
    it('makes one pending delivery of an event per active webhook subscribed to it, once', async () => {
      const account = await newAccount(store);
      const wanted = await subscribe(store, account.id, ['bulk.completed']);
      const paused = await subscribe(store, account.id, ['bulk.completed'], { isActive: false });
      const other = await subscribe(store, account.id, ['lookup.completed']);
      const gone = await subscribe(store, account.id, ['bulk.completed']);
      await store.webhooks.remove(gone, NOW);
      await endedJob(account.id, 'job_1');
      expect(await store.deliveries.relayOutbox(NOW + 1)).toBe(1);
      expect(await store.deliveries.relayOutbox(NOW + 2)).toBe(0);
      const [delivery, ...more] = await store.deliveries.list(wanted, 10);
      expect(more).toEqual([]);
      expect(delivery).toMatchObject({
        webhookId: wanted,
        eventType: 'bulk.completed',
        status: 'pending',
        attempts: 0,
        responseStatus: null,
        responseBody: null,
        errorCode: null,
        nextAttemptAt: NOW + 1,
        lastAttemptAt: null,
        createdAt: NOW + 1,
      });
      expect(delivery!.messageId).toMatch(/^evt_/);
      expect(delivery!.payload).toMatchObject({ event: 'bulk.completed', data: { id: 'job_1', status: 'cancelled' } });
      expect(await store.deliveries.get(delivery!.id)).toEqual(delivery);
      for (const id of [paused, other, gone]) expect(await store.deliveries.list(id, 10)).toEqual([]);
    });

    it('relays at most `limit` events a call, oldest first, and each with its own message id', async () => {
      const account = await newAccount(store);
      const webhook = await subscribe(store, account.id);
      for (const [id, at] of [['job_b', NOW + 2], ['job_a', NOW + 1], ['job_c', NOW + 3]] as const) await endedJob(account.id, id, at);
      expect(await store.deliveries.relayOutbox(NOW + 10, 2)).toBe(2);
      expect(await store.deliveries.relayOutbox(NOW + 20, 2)).toBe(1);
      const deliveries = await store.deliveries.list(webhook, 10);
      expect(deliveries.map((d) => [(d.payload as { data: { id: string } }).data.id, d.createdAt])).toEqual([
        ['job_c', NOW + 20],
        ['job_b', NOW + 10],
        ['job_a', NOW + 10],
      ]);
      expect(new Set(deliveries.map((d) => d.messageId)).size).toBe(3);
      expect((await store.deliveries.list(webhook, 1)).map((d) => d.createdAt)).toEqual([NOW + 20]);
    });

    it('relays the events of one millisecond in the order they were queued', async () => {
      const account = await newAccount(store);
      const webhook = await subscribe(store, account.id);
      const ids = ['job_m', 'job_z', 'job_a', 'job_q', 'job_b'];
      for (const id of ids) await endedJob(account.id, id, NOW);
      expect(await store.deliveries.relayOutbox(NOW + 1, 3)).toBe(3);
      expect(await store.deliveries.relayOutbox(NOW + 2, 3)).toBe(2);
      const newestFirst = (await store.deliveries.list(webhook, 10)).map((d) => (d.payload as { data: { id: string } }).data.id);
      expect(newestFirst.reverse()).toEqual(ids);
    });
  });

  describe('sending', () => {
    it('claims due deliveries of active webhooks for a while, so that no other sender claims them meanwhile', async () => {
      const account = await newAccount(store);
      const webhook = await subscribe(store, account.id);
      await endedJob(account.id, 'job_1');
      await endedJob(account.id, 'job_2', NOW + 1);
      await store.deliveries.relayOutbox(NOW + 5);
      expect(await store.deliveries.claimDue('sender-a', NOW + 4, CLAIM_MS, 10)).toEqual([]);
      const claimed = await store.deliveries.claimDue('sender-a', NOW + 5, CLAIM_MS, 1);
      expect(claimed).toHaveLength(1);
      const second = await store.deliveries.claimDue('sender-b', NOW + 6, CLAIM_MS, 10);
      expect(second.map((d) => d.id)).not.toContain(claimed[0]!.id);
      expect(second).toHaveLength(1);
      expect(await store.deliveries.claimDue('sender-c', NOW + 5 + CLAIM_MS, CLAIM_MS, 10)).toEqual([]);
      expect((await store.deliveries.claimDue('sender-c', NOW + 6 + CLAIM_MS, CLAIM_MS, 10)).map((d) => d.id)).toEqual([claimed[0]!.id]);
      // A paused webhook's deliveries wait.
      await store.webhooks.update(webhook, { url: 'https://hooks.example.com/in', events: ['bulk.completed'], description: '', isActive: false }, NOW);
      expect(await store.deliveries.claimDue('sender-d', NOW + 10 * CLAIM_MS, CLAIM_MS, 10)).toEqual([]);
    });

    it('records an attempt only for the holder of the claim, and lets it fall due again when it stays pending', async () => {
      const account = await newAccount(store);
      await subscribe(store, account.id);
      await endedJob(account.id, 'job_1');
      await store.deliveries.relayOutbox(NOW);
      const [delivery] = await store.deliveries.claimDue('sender-a', NOW, CLAIM_MS, 10);
      const retry = attempt({ status: 'pending', responseStatus: 503, responseBody: 'busy', errorCode: 'http_503', nextAttemptAt: NOW + 5_000, payload: { n: 1 } });
      expect(await store.deliveries.recordAttempt(delivery!.id, 'sender-b', retry)).toBe(false);
      expect(await store.deliveries.recordAttempt(delivery!.id, 'sender-a', retry)).toBe(true);
      expect(await store.deliveries.recordAttempt(delivery!.id, 'sender-a', retry)).toBe(false);
      expect(await store.deliveries.get(delivery!.id)).toMatchObject({ status: 'pending', attempts: 1, responseStatus: 503, responseBody: 'busy', errorCode: 'http_503', nextAttemptAt: NOW + 5_000, lastAttemptAt: NOW + 1, payload: { n: 1 } });
      expect(await store.deliveries.claimDue('sender-b', NOW + 4_999, CLAIM_MS, 10)).toEqual([]);
      const [again] = await store.deliveries.claimDue('sender-b', NOW + 5_000, CLAIM_MS, 10);
      expect(again).toMatchObject({ id: delivery!.id, attempts: 1 });
      expect(await store.deliveries.recordAttempt(delivery!.id, 'sender-b', attempt({ at: NOW + 5_001 }))).toBe(true);
      expect(await store.deliveries.get(delivery!.id)).toMatchObject({ status: 'success', attempts: 2, responseStatus: 200, errorCode: null, nextAttemptAt: null, lastAttemptAt: NOW + 5_001 });
      expect(await store.deliveries.claimDue('sender-c', NOW + 100_000, CLAIM_MS, 10)).toEqual([]);
    });

    it('sends a failed delivery again with a fresh set of attempts and the same message id; nothing else', async () => {
      const account = await newAccount(store);
      await subscribe(store, account.id);
      await endedJob(account.id, 'job_1');
      await store.deliveries.relayOutbox(NOW);
      const [delivery] = await store.deliveries.claimDue('sender-a', NOW, CLAIM_MS, 10);
      expect(await store.deliveries.redeliver(delivery!.id, NOW + 1)).toBe(false);
      await store.deliveries.recordAttempt(delivery!.id, 'sender-a', attempt({ status: 'failed', responseStatus: 500, errorCode: 'http_500' }));
      expect(await store.deliveries.redeliver(delivery!.id, NOW + 9)).toBe(true);
      expect(await store.deliveries.get(delivery!.id)).toMatchObject({ status: 'pending', attempts: 0, nextAttemptAt: NOW + 9, errorCode: null, messageId: delivery!.messageId });
      expect(await store.deliveries.claimDue('sender-b', NOW + 9, CLAIM_MS, 10)).toMatchObject([{ id: delivery!.id }]);
      expect(await store.deliveries.redeliver('dlv_missing', NOW)).toBe(false);
    });

    it('says when the next pending delivery falls due or its claim runs out, and nothing when none is pending', async () => {
      const account = await newAccount(store);
      const webhook = await subscribe(store, account.id);
      expect(await store.deliveries.nextDueAt()).toBeUndefined();
      await endedJob(account.id, 'job_1');
      await store.deliveries.relayOutbox(NOW + 100);
      expect(await store.deliveries.nextDueAt()).toBe(NOW + 100);
      const [delivery] = await store.deliveries.claimDue('sender-a', NOW + 100, CLAIM_MS, 10);
      expect(await store.deliveries.nextDueAt()).toBe(NOW + 100 + CLAIM_MS);
      await store.deliveries.recordAttempt(delivery!.id, 'sender-a', attempt({ status: 'pending', nextAttemptAt: NOW + 50_000 }));
      expect(await store.deliveries.nextDueAt()).toBe(NOW + 50_000);
      await store.webhooks.update(webhook, { url: 'https://hooks.example.com/in', events: ['bulk.completed'], description: '', isActive: false }, NOW);
      expect(await store.deliveries.nextDueAt()).toBeUndefined();
    });

    it('records a test delivery made by the request itself, listed most recent first with the others', async () => {
      const account = await newAccount(store);
      const webhook = await subscribe(store, account.id);
      await endedJob(account.id, 'job_1');
      await store.deliveries.relayOutbox(NOW + 1);
      const test = await store.deliveries.recordTest(webhook, 'msg_test_1', attempt({ status: 'failed', payload: { type: 'test' }, responseStatus: 404, responseBody: 'nope', errorCode: 'http_404', at: NOW + 2 }));
      expect(test).toMatchObject({
        webhookId: webhook,
        messageId: 'msg_test_1',
        eventType: 'test',
        payload: { type: 'test' },
        status: 'failed',
        attempts: 1,
        responseStatus: 404,
        responseBody: 'nope',
        errorCode: 'http_404',
        nextAttemptAt: null,
        lastAttemptAt: NOW + 2,
        createdAt: NOW + 2,
      });
      expect(await store.deliveries.get(test.id)).toEqual(test);
      expect((await store.deliveries.list(webhook, 10)).map((d) => d.eventType)).toEqual(['test', 'bulk.completed']);
      expect(await store.deliveries.claimDue('sender-a', NOW + 3, CLAIM_MS, 10)).toHaveLength(1);
    });
  });

  describe('fair shares between accounts (issue 16 item 4)', () => {
    it('refuses a webhook past the cap with too_many_webhooks, even to creates racing for the last places', async () => {
      const creates = Array.from({ length: 12 }, (_, i) => subscribe(store, 'acc_1', ['lookup.completed'], { id: `wh_${i}` }).catch((e: unknown) => e));
      await subscribe(store, 'acc_1', ['bulk.completed'], { id: 'wh_before' });
      const raced = Array.from({ length: 12 }, (_, i) =>
        store.webhooks.insert({ ...row(`wh_race_${i}`, 'acc_2'), now: NOW }, 5).then(
          () => 'made',
          (e: unknown) => (e as { code?: string; statusCode?: number }).code + ':' + (e as { statusCode?: number }).statusCode,
        ),
      );
      await Promise.all(creates);
      const outcomes = await Promise.all(raced);
      expect(outcomes.filter((o) => o === 'made')).toHaveLength(5);
      expect(outcomes.filter((o) => o === 'too_many_webhooks:409')).toHaveLength(7);
      expect((await store.webhooks.list('acc_2', 100, 0)).total).toBe(5);
      // Without a cap nothing is refused (acc_1 has 13); a deleted webhook frees its place, a paused one does not.
      expect((await store.webhooks.list('acc_1', 100, 0)).total).toBe(13);
      const made = (await store.webhooks.list('acc_2', 100, 0)).webhooks;
      await store.webhooks.update(made[0]!.id, { url: made[0]!.url, events: made[0]!.events, description: '', isActive: false }, NOW);
      await expect(store.webhooks.insert({ ...row('wh_paused_full', 'acc_2'), now: NOW }, 5)).rejects.toMatchObject({ code: 'too_many_webhooks' });
      await store.webhooks.remove(made[1]!.id, NOW);
      await store.webhooks.insert({ ...row('wh_after_delete', 'acc_2'), now: NOW }, 5);
      expect((await store.webhooks.list('acc_2', 100, 0)).total).toBe(5);
    });

    it("claims another account's due delivery before the rest of one account's older backlog, at most `perAccount` of each", async () => {
      const big = await newAccount(store, 100, 'acc_big');
      const small = await newAccount(store, 100, 'acc_small');
      for (let i = 0; i < 3; i++) await subscribe(store, big.id, ['bulk.completed'], { id: `wh_big_${i}` });
      const lone = await subscribe(store, small.id, ['bulk.completed'], { id: 'wh_small' });
      for (let i = 0; i < 4; i++) await endedJob(big.id, `job_big_${i}`, NOW + i);
      await store.deliveries.relayOutbox(NOW + 10);
      await endedJob(small.id, 'job_small', NOW + 20);
      await store.deliveries.relayOutbox(NOW + 30);
      const owners = async (claimed: Promise<{ webhookId: string }[]>) => (await claimed).map((d) => (d.webhookId === lone ? 'small' : 'big')).sort();
      // 12 older deliveries of one account, then one of another: the first claim of 3 holds it.
      expect(await owners(store.deliveries.claimDue('sender-a', NOW + 40, CLAIM_MS, 3))).toEqual(['big', 'big', 'small']);
      // sender-a's two live claims count against the cap: a cap of 3 leaves one.
      expect(await owners(store.deliveries.claimDue('sender-b', NOW + 40, CLAIM_MS, 8, 3))).toEqual(['big']);
      expect(await owners(store.deliveries.claimDue('sender-c', NOW + 40, CLAIM_MS, 20))).toHaveLength(9);
    });

    it("counts an account's live claims by any sender against `perAccount`, and frees a place when a claim is recorded or runs out", async () => {
      const busy = await newAccount(store, 100, 'acc_busy');
      const other = await newAccount(store, 100, 'acc_other');
      for (let i = 0; i < 3; i++) await subscribe(store, busy.id, ['bulk.completed'], { id: `wh_busy_${i}` });
      const lone = await subscribe(store, other.id, ['bulk.completed'], { id: 'wh_other' });
      for (let i = 0; i < 3; i++) await endedJob(busy.id, `job_busy_${i}`, NOW + i);
      await store.deliveries.relayOutbox(NOW + 10);
      const held = await store.deliveries.claimDue('sender-a', NOW + 20, CLAIM_MS, 10, 4);
      expect(held).toHaveLength(4);
      await endedJob(other.id, 'job_other', NOW + 21);
      await store.deliveries.relayOutbox(NOW + 22);

      // Another sender, another process's claim: nothing more of the busy account, the other's one.
      expect((await store.deliveries.claimDue('sender-b', NOW + 30, CLAIM_MS, 10, 4)).map((d) => d.webhookId)).toEqual([lone]);
      expect(await store.deliveries.claimDue('sender-b', NOW + 31, CLAIM_MS, 10, 4)).toEqual([]);
      // Without a cap the live claims do not count.
      expect(await store.deliveries.claimDue('sender-c', NOW + 31, CLAIM_MS, 1)).toHaveLength(1);

      // One of sender-a's attempts is recorded (still pending, due later): its place is free again.
      expect(await store.deliveries.recordAttempt(held[0]!.id, 'sender-a', attempt({ status: 'pending', nextAttemptAt: NOW + 60_000, errorCode: 'timeout' }))).toBe(true);
      const after = await store.deliveries.claimDue('sender-b', NOW + 40, CLAIM_MS, 10, 5);
      expect(after).toHaveLength(1);
      expect(held.map((d) => d.id)).not.toContain(after[0]!.id);
      // Once sender-a's claims run out they count no more, and are taken over (oldest first) up to
      // the cap: sender-b's and sender-c's two claims are still live, so a cap of 5 leaves three.
      const late = NOW + 20 + CLAIM_MS + 1;
      const retaken = await store.deliveries.claimDue('sender-b', late, CLAIM_MS, 10, 5);
      expect(retaken.map((d) => d.id).sort()).toEqual(held.slice(1).map((d) => d.id).sort());
    });

    it("bounds an account's pending deliveries: the excess is kept as failed backlog_full, not sent, and others are unaffected", async () => {
      const noisy = await newAccount(store, 100, 'acc_noisy');
      const quiet = await newAccount(store, 100, 'acc_quiet');
      const hooks = [];
      for (let i = 0; i < 3; i++) hooks.push(await subscribe(store, noisy.id, ['bulk.completed'], { id: `wh_noisy_${i}` }));
      const quietHook = await subscribe(store, quiet.id, ['bulk.completed'], { id: 'wh_quiet' });
      for (let i = 0; i < 3; i++) await endedJob(noisy.id, `job_n${i}`, NOW + i);
      await endedJob(quiet.id, 'job_q', NOW + 5);
      await store.deliveries.relayOutbox(NOW + 10, 100, 4);
      // A second relay counts what the first left pending.
      await endedJob(noisy.id, 'job_n3', NOW + 11);
      await store.deliveries.relayOutbox(NOW + 12, 100, 4);
      const all = (await Promise.all(hooks.map((h) => store.deliveries.list(h, 100)))).flat();
      expect(all).toHaveLength(12);
      expect(all.filter((d) => d.status === 'pending')).toHaveLength(4);
      const dropped = all.filter((d) => d.status === 'failed');
      expect(dropped).toHaveLength(8);
      for (const d of dropped) expect(d).toMatchObject({ errorCode: 'backlog_full', attempts: 0, nextAttemptAt: null });
      expect(await store.deliveries.list(quietHook, 10)).toMatchObject([{ status: 'pending' }]);
      expect(await store.deliveries.claimDue('sender-a', NOW + 20, CLAIM_MS, 100)).toHaveLength(5);
      // A dropped delivery can still be sent again by hand.
      expect(await store.deliveries.redeliver(dropped[0]!.id, NOW + 30)).toBe(true);
    });
  });

  function row(id: string, accountId: string) {
    return { id, accountId, kind: 'generic', url: 'https://hooks.example.com/in', events: ['bulk.completed'], description: '', isActive: true, secretSealed: 's', telegramChat: null, telegramTokenSealed: null };
  }
});
