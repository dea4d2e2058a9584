import { afterEach, describe, expect, it } from 'vitest';
import { addKey, bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { roleTable, ROLE_ORDER } from '../support/role-table.js';
import { TEST_STORES } from '../support/test-engine.js';

interface Cell {
  h: ApiHarness;
  key: string;
  adminKey: string;
}

type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
const send = (h: ApiHarness, key: string, method: Method, url: string, payload?: object) => h.app.inject({ method, url, headers: bearer(key), ...(payload ? { payload } : {}) });

/** `yes` when every step answered 2xx, `no (403)` when the first refused with 403, else what it did. */
async function steps(c: Cell, calls: Array<[Method, string, object?]>): Promise<string> {
  for (const [i, [method, url, payload]] of calls.entries()) {
    const r = await send(c.h, c.key, method, url, payload);
    if (r.statusCode === 403 && i === 0) return 'no (403)';
    if (r.statusCode >= 300) return `unexpected ${r.statusCode} on ${method} ${url}: ${r.body.slice(0, 120)}`;
  }
  return 'yes';
}

/** Made with the admin key, for the operations on something that exists. */
async function made(c: Cell, method: Method, url: string, payload: object): Promise<any> {
  const r = await send(c.h, c.adminKey, method, url, payload);
  expect(r.statusCode, r.body).toBeLessThan(300);
  return json(r);
}

const PHONE_JOB = { feature: 'breaches', numbers: ['+49 30 1234567'] };
const WEBHOOK = { url: 'http://127.0.0.1:9/hook', events: ['bulk.completed'] };

const PROBES: Record<string, (c: Cell) => Promise<string>> = {
  'read jobs, lists, monitors, webhooks and workflows': (c) => steps(c, [['GET', '/api/jobs'], ['GET', '/api/lists'], ['GET', '/api/monitors'], ['GET', '/api/webhooks'], ['GET', '/api/workflows']]),
  'read the account, its quotas and its credit alert': (c) => steps(c, [['GET', '/api/account'], ['GET', '/api/account/credit-alert']]),
  'run single lookups (spends credits)': (c) => steps(c, [['POST', '/api/lookup/email/gender', { email: 'anna.schmidt@example.com' }]]),
  'start and cancel a job': async (c) => {
    const r = await send(c.h, c.key, 'POST', '/api/phone-jobs', PHONE_JOB);
    if (r.statusCode === 403) return 'no (403)';
    return steps(c, [['POST', `/api/jobs/${json(r).id}/cancel`]]);
  },
  'delete a finished job': async (c) => {
    const job = await made(c, 'POST', '/api/phone-jobs', PHONE_JOB);
    await made(c, 'POST', `/api/jobs/${job.id}/cancel`, {});
    return steps(c, [['DELETE', `/api/jobs/${job.id}`]]);
  },
  'create and delete a list': async (c) => {
    const r = await send(c.h, c.key, 'POST', '/api/lists', { name: 'l', type: 'email', targets: ['a@example.com'] });
    if (r.statusCode === 403) return 'no (403)';
    return steps(c, [['DELETE', `/api/lists/${json(r).id}`]]);
  },
  'create, change, pause, run and delete a monitor': async (c) => {
    const r = await send(c.h, c.key, 'POST', '/api/monitors', { name: 'm', type: 'email', frequency: 'weekly', targets: ['a@example.com'] });
    if (r.statusCode === 403) return 'no (403)';
    const id = json(r).id;
    return steps(c, [['PATCH', `/api/monitors/${id}`, { name: 'm2' }], ['POST', `/api/monitors/${id}/pause`], ['POST', `/api/monitors/${id}/resume`], ['POST', `/api/agent/monitors/${id}/run`], ['DELETE', `/api/monitors/${id}`]]);
  },
  'create, run and delete a workflow': async (c) => {
    const r = await send(c.h, c.key, 'POST', '/api/workflows', { name: 'w', steps: [{ id: 'wait', type: 'delay', config: { seconds: 60 } }] });
    if (r.statusCode === 403) return 'no (403)';
    const id = json(r).id;
    return steps(c, [['POST', `/api/workflows/${id}/run`, { input: {} }], ['DELETE', `/api/workflows/${id}`]]);
  },
  'set the credit alert': (c) => steps(c, [['PUT', '/api/account/credit-alert', { threshold: 10 }]]),
  'create a webhook': (c) => steps(c, [['POST', '/api/webhooks', WEBHOOK]]),
  'read a webhook\'s signing secret': async (c) => {
    const hook = (await made(c, 'POST', '/api/webhooks', WEBHOOK)).result;
    const r = await send(c.h, c.key, 'GET', `/api/webhooks/${hook.id}`);
    if (r.statusCode !== 200) return `unexpected ${r.statusCode}`;
    return json(r).result.signing_secret === hook.signing_secret ? 'yes' : 'no (not shown)';
  },
  'change, test, rotate and delete a webhook': async (c) => {
    const hook = (await made(c, 'POST', '/api/webhooks', WEBHOOK)).result;
    return steps(c, [
      ['PUT', '/api/webhooks', { id: hook.id, ...WEBHOOK, description: 'changed' }],
      ['POST', '/api/webhooks/test', { id: hook.id }],
      ['POST', `/api/webhooks/${hook.id}/rotate-secret`, { overlap_seconds: 0 }],
      ['DELETE', `/api/webhooks/${hook.id}`],
    ]);
  },
  'read the audit and usage logs': (c) => steps(c, [['GET', '/api/account/audit'], ['GET', '/api/account/usage']]),
};

/**
 * Walks the route matrix of the README row by row, as key-matrix.test.ts walks the key one:
 * a fresh account per cell, the operation done for real with a key of the cell's role, the outcome
 * in the cell's words; a cell that says what the API does not do fails, and so does a row without
 * a probe or a probe without a row.
 */
describe.each(TEST_STORES)('the route matrix of the README, row by row, on %s', (kind) => {
  afterEach(() => closeHarnesses());

  it('every row and role does what its cell says', async () => {
    const rows = roleTable('operation');
    expect(rows, 'the route matrix is in README.md').toBeDefined();
    expect(rows!.map((r) => r.name)).toEqual(Object.keys(PROBES));
    const h = await openStoreHarness(kind, { SLUICE_RATE_LIMIT_PER_MINUTE: '10000', SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true', SLUICE_WEBHOOK_TIMEOUT_MS: '1000' });
    for (const row of rows!) {
      for (const role of ROLE_ORDER) {
        const a = await newAccount(h);
        const key = role === 'admin' ? a.key : (await addKey(h, a.id, role, `caller ${role}`)).key;
        expect(await PROBES[row.name]!({ h, key, adminKey: a.key }), `${row.name} by ${role}`).toBe(row[role]);
      }
    }
  }, 240_000);
});
