import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, multipart, newAccount, openApiHarness, storedObjects, streamingMultipart, type ApiHarness } from '../support/api-harness.js';

afterEach(closeHarnesses);

async function setup() {
  const h = await openApiHarness();
  return { h, alice: (await newAccount(h)).key, bob: (await newAccount(h)).key };
}

function call(h: ApiHarness, key: string, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) {
  return h.app.inject({ method, url, headers: bearer(key), ...(payload === undefined ? {} : { payload }) });
}

/** A CSV upload whose body is a stream, never a whole buffer: as a client sends a large file. */
function uploadList(h: ApiHarness, key: string, fields: Record<string, string>, csv: () => AsyncIterable<string>) {
  const { body, contentType } = streamingMultipart(fields, Readable.from(csv()), 'targets.csv');
  return h.app.inject({ method: 'POST', url: '/api/lists', headers: { ...bearer(key), 'content-type': contentType }, payload: body });
}

const ROWS = 30_000;

/** Row i (1-based): every 1000th is not an address, every 500th (not 1000th) repeats row 1's address. */
async function* emails(): AsyncIterable<string> {
  yield 'Name,Email Address\n';
  for (let i = 1; i <= ROWS; i++) {
    const email = i % 1000 === 0 ? `broken-${i}` : i % 500 === 0 ? 'USER1@example.com' : `user${i}@example.com`;
    yield `Person ${i},${email}\n`;
  }
}

describe('POST /api/lists with a CSV', () => {
  it('streams the file into the object store, adds each valid target once, and counts and shows the invalid rows', async () => {
    const { h, alice } = await setup();
    const response = await uploadList(h, alice, { name: 'Customers', type: 'email' }, emails);
    expect(response.statusCode, response.body).toBe(201);
    const list = json(response);
    const invalid = ROWS / 1000;
    const duplicates = ROWS / 500 - invalid;
    expect(list).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'Customers',
      type: 'email',
      status: 'ready',
      target_count: ROWS - invalid - duplicates,
      invalid_count: invalid,
      duplicate_count: duplicates,
      invalid_by_code: { invalid_email: invalid },
      created_at: expect.any(String),
      invalid: {
        count: invalid,
        by_code: { invalid_email: invalid },
        examples: Array.from({ length: 20 }, (_, i) => ({ row: (i + 1) * 1000, value: `broken-${(i + 1) * 1000}`, code: 'invalid_email' })),
      },
    });
    expect(storedObjects(h, 'lists/')).toEqual([`lists/${list.id}.csv`]);
    const monitor = json(await call(h, alice, 'POST', '/api/monitors', { name: 'From the list', type: 'email', frequency: 'weekly', list_id: list.id }));
    expect(monitor.target_count).toBe(list.target_count);
    // In the file's order (issue 33), not by address (where `user10001@` would come first).
    const first = json(await call(h, alice, 'GET', `/api/monitors/${monitor.id}/targets?limit=1`)).targets[0];
    expect(first.email).toBe('user1@example.com');
  });

  it('reads phone numbers with default_country and the column named, as a phone job does', async () => {
    const { h, alice } = await setup();
    const csv = async function* () {
      yield 'who,mobile number,landline\nA,030 1234567,x\nB,+1 415 555 2671,x\nC,12,x\n';
    };
    const response = await uploadList(h, alice, { name: 'Phones', type: 'phone', default_country: 'DE', column: 'mobile number' }, csv);
    expect(response.statusCode, response.body).toBe(201);
    expect(json(response)).toMatchObject({ type: 'phone', target_count: 2, invalid_count: 1, invalid: { examples: [{ row: 3, value: '12', code: 'invalid_phone' }] } });
  });

  it.each([
    [{ name: 'x', type: 'email' }, 'Name,Phone\nA,+49301234567\n', 422, 'no_key_column'],
    [{ name: 'x', type: 'email' }, '', 422, 'empty_file'],
    [{ name: 'x', type: 'darkweb' }, 'darkweb\nexample.com\n', 422, 'monitor_type_unsupported'],
    [{ name: 'x', type: 'pets' }, 'email\na@example.com\n', 422, 'unknown_monitor_type'],
    [{ type: 'email' }, 'email\na@example.com\n', 422, 'invalid_request'],
    [{ name: 'x', type: 'phone', default_country: 'QQ' }, 'phone\n+49301234567\n', 422, 'unknown_country'],
  ])('refuses %j with the file %j: %i %s, leaving no list and no stored file', async (fields, csv, status, code) => {
    const { h, alice } = await setup();
    const response = await uploadList(h, alice, fields, async function* () {
      if (csv) yield csv;
    });
    expect(response.statusCode, response.body).toBe(status);
    expect(json(response).code).toBe(code);
    expect(json(await call(h, alice, 'GET', '/api/lists')).total).toBe(0);
    expect(storedObjects(h, 'lists/')).toEqual([]);
  });

  it('wants the file in the field named file', async () => {
    const { h, alice } = await setup();
    const body = multipart([{ name: 'name', value: 'x' }, { name: 'type', value: 'email' }, { name: 'upload', value: 'email\na@example.com\n', filename: 'a.csv' }]);
    const response = await h.app.inject({ method: 'POST', url: '/api/lists', headers: { ...bearer(alice), ...body.headers }, payload: body.payload });
    expect(response.statusCode).toBe(422);
    expect(json(response).code).toBe('invalid_request');
  });
});

describe('POST /api/lists with JSON, GET and DELETE', () => {
  it('makes a ready list, lists the account\'s lists by type, and keeps them from other accounts', async () => {
    const { h, alice, bob } = await setup();
    const response = await call(h, alice, 'POST', '/api/lists', { name: 'Firms', type: 'company', targets: ['Acme Inc', 'https://www.Acme.com/about', 'acme inc', ''] });
    expect(response.statusCode, response.body).toBe(201);
    const list = json(response);
    expect(list).toMatchObject({ status: 'ready', type: 'company', target_count: 2, duplicate_count: 1, invalid_count: 1, invalid: { by_code: { empty_value: 1 } } });
    await call(h, alice, 'POST', '/api/lists', { name: 'Mails', type: 'email', targets: ['a@example.com'] });
    const all = json(await call(h, alice, 'GET', '/api/lists'));
    expect(all.total).toBe(2);
    expect(all.lists.map((l: { name: string }) => l.name)).toEqual(['Mails', 'Firms']);
    expect(json(await call(h, alice, 'GET', '/api/lists?type=company')).lists.map((l: { name: string }) => l.name)).toEqual(['Firms']);
    expect(json(await call(h, alice, 'GET', `/api/lists/${list.id}`))).toMatchObject({ id: list.id, target_count: 2 });
    expect(json(await call(h, bob, 'GET', '/api/lists')).total).toBe(0);
    for (const [method, url] of [['GET', `/api/lists/${list.id}`], ['DELETE', `/api/lists/${list.id}`]] as const) {
      const refused = await call(h, bob, method, url);
      expect(refused.statusCode).toBe(404);
      expect(json(refused).code).toBe('list_not_found');
    }
    expect(json(await call(h, alice, 'DELETE', `/api/lists/${list.id}`))).toEqual({ id: list.id, deleted: true });
    expect((await call(h, alice, 'GET', `/api/lists/${list.id}`)).statusCode).toBe(404);
  });

  it.each([
    [{ name: 'x', type: 'darkweb', targets: [] }, 'monitor_type_unsupported'],
    [{ name: 'x', type: 'email' }, 'invalid_request'],
    [{ name: 'x', type: 'email', targets: [1, 2] }, 'invalid_request'],
    [{ name: 'x', type: 'email', targets: [], extra: 1 }, 'invalid_request'],
  ])('refuses %j with 422 %s', async (body, code) => {
    const { h, alice } = await setup();
    const response = await call(h, alice, 'POST', '/api/lists', body);
    expect(response.statusCode).toBe(422);
    expect(json(response).code).toBe(code);
  });
});
