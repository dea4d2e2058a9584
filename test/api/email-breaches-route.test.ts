import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { importBreaches } from '../../src/cli/import-command.js';
import { bearer, closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';

const BREACHES = [
  'email,breach,breached_at,data_classes',
  'jane@example.com,LinkedIn,2021-06-01,Email addresses;Passwords',
  'jane@example.com,Adobe,2013-10-04,Email addresses;Password hints',
  'jane@example.com,Collection #1,,Email addresses',
].join('\n');

const URL = '/api/lookup/email/breaches';

async function harness(): Promise<ApiHarness> {
  const h = await openApiHarness();
  await importBreaches(h.engine.deps.store, Readable.from([Buffer.from(BREACHES)]), { maxLineBytes: 65_536 });
  return h;
}

const post = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: URL, headers: bearer(key), payload: payload as Record<string, unknown> });

afterEach(closeHarnesses);

describe('POST /api/lookup/email/breaches', () => {
  it('answers breach_info; the first lookup of an address costs 1, a repeat in any spelling 0, even on an empty balance', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 2 });
    const first = await post(h, key, { email: 'Jane@Example.com' });
    expect(first.statusCode, first.body).toBe(200);
    expect(json(first)).toEqual({
      email: 'jane@example.com',
      breach_info: {
        breached: true,
        count: 3,
        first_breach: '2013-10-04',
        last_breach: '2021-06-01',
        services: ['Adobe', 'Collection #1', 'LinkedIn'],
        exposed_data: ['Email addresses', 'Password hints', 'Passwords'],
        breaches: [
          { name: 'Adobe', date: '2013-10-04', data_classes: ['Email addresses', 'Password hints'] },
          { name: 'LinkedIn', date: '2021-06-01', data_classes: ['Email addresses', 'Passwords'] },
          { name: 'Collection #1', date: null, data_classes: ['Email addresses'] },
        ],
      },
      credits: 1,
      cached: false,
    });

    const clean = json(await post(h, key, { email: 'nobody@example.net' }));
    expect(clean).toEqual({
      email: 'nobody@example.net',
      breach_info: { breached: false, count: 0, first_breach: null, last_breach: null, services: [], exposed_data: [], breaches: [] },
      credits: 1,
      cached: false,
    });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);

    const repeat = await post(h, key, { email: 'Jane Doe <jane@EXAMPLE.com>' });
    expect(repeat.statusCode, repeat.body).toBe(200);
    expect(json(repeat)).toMatchObject({ email: 'jane@example.com', breach_info: { count: 3 }, credits: 0, cached: false });
    const unpaid = await post(h, key, { email: 'someone.else@example.net' });
    expect(unpaid.statusCode).toBe(402);
    expect(json(unpaid)).toMatchObject({ code: 'insufficient_credits' });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);
  });

  it('refuses what is not one address with 400 and its code, and a body without email with 422, all free', async () => {
    const h = await harness();
    const { id, key } = await newAccount(h, { credits: 5 });
    for (const [email, code, message] of [
      ['not an email', 'invalid_email', 'Invalid email address'],
      ['   ', 'empty_value', 'Email address is empty'],
      ['a@example.com, b@example.com', 'multiple_addresses', 'One email address per lookup: this value holds several; look them up one at a time, or upload them as a bulk job'],
    ] as const) {
      const response = await post(h, key, { email });
      expect(response.statusCode, email).toBe(400);
      expect(json(response)).toEqual({ code, error: message });
    }
    for (const payload of [{}, { email: 42 }]) {
      const response = await post(h, key, payload);
      expect(response.statusCode).toBe(422);
      expect(json(response)).toMatchObject({ code: 'invalid_request' });
    }
    expect((await post(h, 'sluice_nope', { email: 'jane@example.com' })).statusCode).toBe(401);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(5);
  });
});
