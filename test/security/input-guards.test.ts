import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

const HUGE = '9223372036854775808';

/**
 * Issue 27, finding 6: an offset above 2^63 answered 500 on the list routes of both stores, and a
 * NUL character in a string 500 under PostgreSQL. Both are bad input, so 400 with the error shape.
 */
describe.each(TEST_STORES)('inputs no store can hold, on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('an offset or limit past 2^53 is 400 on every list route, and a normal page still works', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h);
    for (const route of ['/api/jobs', '/api/webhooks', '/api/monitors', '/api/monitoring/targets', '/api/account/audit']) {
      for (const query of [`offset=${HUGE}`, `offset=${HUGE}0000`, 'offset=9007199254740992']) {
        const r = await h.app.inject({ method: 'GET', url: `${route}?${query}`, headers: bearer(a.key) });
        expect(r.statusCode, `${route}?${query}: ${r.body}`).toBe(400);
        expect(json(r).error?.code ?? json(r).code ?? json(r)).toBeDefined();
      }
      const fine = await h.app.inject({ method: 'GET', url: `${route}?offset=5`, headers: bearer(a.key) });
      expect(fine.statusCode, `${route}: ${fine.body}`).toBe(200);
    }
  });

  it('a `before` cursor past 2^53 is 400 on the audit and usage logs (500 on PostgreSQL before), and a normal one still works', async () => {
    const h = await openStoreHarness(kind);
    const a = await newAccount(h);
    for (const route of ['/api/account/audit', '/api/account/usage']) {
      const r = await h.app.inject({ method: 'GET', url: `${route}?before=99999999999999999999`, headers: bearer(a.key) });
      expect(r.statusCode, `${route}: ${r.body}`).toBe(400);
      expect(json(r).code).toBe('invalid_request');
      expect((await h.app.inject({ method: 'GET', url: `${route}?before=5`, headers: bearer(a.key) })).statusCode).toBe(200);
    }
  });

  it('a NUL character in a body, a query or a path is 400, never 500', async () => {
    const h = await openStoreHarness(kind, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    const a = await newAccount(h);
    const calls = [
      { method: 'POST', url: '/api/webhooks', payload: { url: 'http://127.0.0.1:9/x', events: ['bulk.completed'], description: 'a\u0000b' } },
      { method: 'POST', url: '/api/lists', payload: { name: 'n\u0000', type: 'email', targets: ['a@example.com'] } },
      { method: 'POST', url: '/api/monitors', payload: { name: 'm\u0000', type: 'email', frequency: 'weekly', targets: ['a@example.com'] } },
      { method: 'POST', url: '/api/account/keys', payload: { name: 'k\u0000', role: 'tech' } },
      { method: 'GET', url: '/api/monitors?type=em%00ail' },
      { method: 'GET', url: '/api/jobs/%00' },
    ] as const;
    for (const call of calls) {
      const r = await h.app.inject({ ...call, headers: bearer(a.key) });
      expect(r.statusCode, `${call.method} ${call.url}: ${r.body}`).toBe(400);
    }
  });
});
