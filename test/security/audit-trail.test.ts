import { afterEach, describe, expect, it, vi } from 'vitest';
import { accountsCommand } from '../../src/cli/accounts-command.js';
import { addKey, bearer, closeHarnesses, json, newAccount, openStoreHarness, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { captureIo } from '../support/capture-io.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 27, item 9: every write of an account in its audit log (who, what, when, from where), and
 * the spec's usage log (each request with its credits and response time), both readable by an
 * admin key of the account only, and kept for a bounded time.
 */
const FROM = { remoteAddress: '127.0.0.7', headers: { 'user-agent': 'trail-test/1' } };

function call(h: ApiHarness, key: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  return h.app.inject({ method, url, ...FROM, headers: { ...FROM.headers, ...bearer(key) }, ...(payload === undefined ? {} : { payload }) });
}

async function ok(h: ApiHarness, key: string, method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', url: string, payload?: object) {
  const r = await call(h, key, method, url, payload);
  expect(r.statusCode, `${method} ${url}: ${r.body}`).toBeLessThan(300);
  return json(r);
}

describe.each(TEST_STORES)('audit trail and usage log, on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('records every write with its actor, target and address, for the admin to read', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech', 'ops');
    const job = json(await uploadCsv(h, tech.key, 'email\nanna@example.com\n'));
    await ok(h, tech.key, 'POST', `/api/jobs/${job.id}/cancel`);
    const phoneJob = await ok(h, tech.key, 'POST', '/api/phone-jobs', { feature: 'breaches', numbers: ['+49 30 1234567'] });
    const list = await ok(h, tech.key, 'POST', '/api/lists', { name: 'staff', type: 'email', targets: ['a@example.com'] });
    const monitor = await ok(h, tech.key, 'POST', '/api/monitors', { name: 'm', type: 'email', frequency: 'weekly', list_id: list.id });
    await ok(h, tech.key, 'PATCH', `/api/monitors/${monitor.id}`, { name: 'm2' });
    await ok(h, tech.key, 'POST', `/api/monitors/${monitor.id}/pause`);
    await ok(h, tech.key, 'POST', `/api/monitors/${monitor.id}/resume`);
    await ok(h, tech.key, 'POST', `/api/monitors/${monitor.id}/targets`, { targets: ['b@example.com'] });
    await ok(h, tech.key, 'DELETE', `/api/monitors/${monitor.id}/targets`, { targets: ['b@example.com'] });
    await ok(h, tech.key, 'POST', `/api/agent/monitors/${monitor.id}/run`);
    await ok(h, tech.key, 'DELETE', `/api/monitors/${monitor.id}`);
    await ok(h, tech.key, 'DELETE', `/api/lists/${list.id}`);
    await ok(h, tech.key, 'PUT', '/api/account/credit-alert', { threshold: 10 });
    // A refused write leaves no entry: a readonly key's attempt is not an action of the account.
    const viewer = await addKey(h, a.id, 'readonly', 'viewer');
    expect((await call(h, viewer.key, 'POST', '/api/lists', { name: 'x', type: 'email', targets: ['c@example.com'] })).statusCode).toBe(403);

    const entries = (await ok(h, a.key, 'GET', '/api/account/audit?limit=100')).entries as Array<{ action: string; target_id: string; actor: { id?: string }; source_ip: string; user_agent: string }>;
    const byTech = entries.filter((e) => e.actor.id === tech.keyId).map((e) => `${e.action} ${e.target_id}`);
    expect(byTech.reverse()).toEqual([
      `job.created ${job.id}`,
      `job.cancelled ${job.id}`,
      `job.created ${phoneJob.id}`,
      `list.created ${list.id}`,
      `monitor.created ${monitor.id}`,
      `monitor.updated ${monitor.id}`,
      `monitor.paused ${monitor.id}`,
      `monitor.resumed ${monitor.id}`,
      `monitor.targets_added ${monitor.id}`,
      `monitor.targets_removed ${monitor.id}`,
      `monitor.run_started ${monitor.id}`,
      `monitor.deleted ${monitor.id}`,
      `list.deleted ${list.id}`,
      `credit_alert.set ${a.id}`,
    ]);
    // The upload went through the harness's own inject (its default address and agent); the rest through `call`.
    for (const e of entries.filter((x) => x.actor.id === tech.keyId && x.action !== 'job.created')) expect(e).toMatchObject({ source_ip: '127.0.0.7', user_agent: 'trail-test/1' });
    expect(entries.some((e) => e.action === 'list.created' && e.actor.id === viewer.keyId)).toBe(false);
    expect((await call(h, tech.key, 'GET', '/api/account/audit')).statusCode).toBe(403);
  });

  it('the top-up of an operator is in the log, by the CLI', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h);
    expect(await accountsCommand(h.engine, ['topup', a.id, '250'], captureIo().io)).toBe(0);
    const entries = (await ok(h, a.key, 'GET', '/api/account/audit')).entries;
    expect(entries[0]).toMatchObject({ action: 'credits.topped_up', actor: { type: 'cli' }, target_id: a.id, label: '250 credits' });
  });

  it('logs each keyed request with its route, status, credits and time, readable by the account\'s admin only', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h);
    const other = await newAccount(h);
    const tech = await addKey(h, a.id, 'tech', 'ops');
    await ok(h, tech.key, 'POST', '/api/lookup/email/gender', { email: 'anna.schmidt@example.com' });
    await ok(h, tech.key, 'POST', '/api/lookup/email/gender', { email: 'anna.schmidt@example.com' });
    expect((await call(h, tech.key, 'GET', '/api/jobs/job_nope')).statusCode).toBe(404);
    await ok(h, other.key, 'GET', '/api/account');

    const read = async () => (await ok(h, a.key, 'GET', `/api/account/usage?limit=100`)).entries as Array<Record<string, unknown>>;
    const mine = await vi.waitFor(async () => {
      const entries = (await read()).filter((e) => e.key_id === tech.keyId);
      expect(entries).toHaveLength(3);
      return entries.reverse();
    }, { timeout: 10_000, interval: 200 });
    expect(mine.map((e) => [e.method, e.route, e.status, e.credits])).toEqual([
      ['POST', '/api/lookup/email/gender', 200, 1],
      // A repeat within the window is free, and the log says so.
      ['POST', '/api/lookup/email/gender', 200, 0],
      ['GET', '/api/jobs/:id', 404, 0],
    ]);
    for (const e of mine) {
      expect(e.source_ip).toBe('127.0.0.7');
      expect(typeof e.duration_ms === 'number' && e.duration_ms >= 0).toBe(true);
      expect(Date.parse(e.at as string)).not.toBeNaN();
    }
    // Another account's requests are not in this account's log, and a tech key reads none of it.
    expect((await read()).some((e) => e.route === '/api/account' && e.key_id === other.keyId)).toBe(false);
    expect((await call(h, tech.key, 'GET', '/api/account/usage')).statusCode).toBe(403);
    const since = (await ok(h, a.key, 'GET', `/api/account/usage?since=${encodeURIComponent(new Date(Date.now() + 60_000).toISOString())}`)).entries;
    expect(since).toEqual([]);
  });

  it('keeps each account\'s newest entries and drops those past the retention', async () => {
    const h = await openStoreHarness(kind);
    const usage = h.engine.deps.store.usage;
    const entry = (accountId: string, at: number) => ({ accountId, at, keyId: 'k', method: 'GET', route: '/api/account', status: 200, credits: 0, durationMs: 1, sourceIp: null });
    await usage.append([entry('acct_a', 1_000), entry('acct_a', 2_000), entry('acct_a', 3_000), entry('acct_a', 4_000), entry('acct_b', 500), entry('acct_b', 5_000)]);
    expect(await usage.purge(1_000, ['acct_a'], 2)).toBe(3);
    expect((await usage.list('acct_a', { limit: 10 })).map((e) => e.at)).toEqual([4_000, 3_000]);
    expect((await usage.list('acct_b', { limit: 10 })).map((e) => e.at)).toEqual([5_000]);
  });
});
