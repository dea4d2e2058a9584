import { afterEach, describe, expect, it } from 'vitest';
import {
  bearer,
  closeHarnesses,
  jobCount,
  json,
  multipart,
  newAccount,
  openApiHarness,
  runUntilDone,
  type ApiHarness,
} from '../support/api-harness.js';
import { resultRecords } from '../support/csv-fixture.js';

afterEach(closeHarnesses);

const CSV = 'email;name\nmaria.rossi@example.com;María\njohn.smith@example.com;John\n';

function upload(h: ApiHarness, key: string, fields: Record<string, string>, options: { file?: string | Buffer; url?: string; idempotencyKey?: string } = {}) {
  const body = multipart([
    ...Object.entries(fields).map(([name, value]) => ({ name, value })),
    { name: 'file', value: options.file ?? CSV, filename: 'people.csv' },
  ]);
  return h.app.inject({
    method: 'POST',
    url: options.url ?? '/api/jobs/bulk',
    headers: { ...bearer(key), ...body.headers, ...(options.idempotencyKey ? { 'idempotency-key': options.idempotencyKey } : {}) },
    payload: body.payload,
  });
}

describe('input options of POST /api/jobs/bulk', () => {
  const refused: [field: string, value: string, code: string][] = [
    ['delimiter', 'colon', 'invalid_delimiter'],
    ['delimiter', ':', 'invalid_delimiter'],
    ['delimiter', ';;', 'invalid_delimiter'],
    ['encoding', 'ebcdic', 'unknown_encoding'],
    ['encoding', 'utf-32', 'unknown_encoding'],
    ['excel', 'yes', 'invalid_request'],
    ['excel', '1', 'invalid_request'],
    ['country_column', 'c'.repeat(201), 'invalid_request'],
  ];
  it.each(refused)('%s=%s is refused with 422 %s, and no job is made', async (field, value, code) => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const response = await upload(h, a.key, { type: 'gender', [field]: value });
    expect(response.statusCode).toBe(422);
    expect(json(response).code).toBe(code);
    expect(json(response).error).toContain(field);
    expect(await jobCount(h, a.id)).toBe(0);
  });

  const stored: [fields: Record<string, string>, options: Record<string, unknown>][] = [
    [{ delimiter: 'semicolon' }, { delimiter: ';' }],
    [{ delimiter: ';' }, { delimiter: ';' }],
    [{ delimiter: '\\t' }, { delimiter: '\t' }],
    [{ delimiter: '\t' }, { delimiter: '\t' }],
    [{ delimiter: 'TAB' }, { delimiter: '\t' }],
    [{ delimiter: 'pipe' }, { delimiter: '|' }],
    [{ delimiter: ',' }, { delimiter: ',' }],
    [{ encoding: 'Windows-1252' }, { encoding: 'windows-1252' }],
    [{ encoding: 'cp1252' }, { encoding: 'windows-1252' }],
    [{ encoding: 'latin1' }, { encoding: 'iso-8859-1' }],
    [{ encoding: 'UTF-16LE' }, { encoding: 'utf-16le' }],
    [{ encoding: 'utf8' }, { encoding: 'utf-8' }],
    [{ country_column: ' Land ' }, { countryColumn: 'Land' }],
    [{ excel: 'true' }, { excel: true }],
  ];
  it.each(stored)('%j is stored on the job as %j', async (fields, options) => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const response = await upload(h, a.key, { type: 'gender', ...fields });
    expect(response.statusCode).toBe(202);
    const job = await h.engine.deps.jobs.require(json(response).id);
    expect(job.options).toMatchObject(options);
  });

  it('empty or false fields are as if not given', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const response = await upload(h, a.key, { type: 'gender', delimiter: '', encoding: '', country_column: '', excel: 'false' });
    expect(response.statusCode).toBe(202);
    const { options } = await h.engine.deps.jobs.require(json(response).id);
    expect(options).not.toHaveProperty('delimiter');
    expect(options).not.toHaveProperty('encoding');
    expect(options).not.toHaveProperty('countryColumn');
    expect(options).not.toHaveProperty('excel');
  });

  it('the options reach the reader: a Windows-1252 semicolon file declared as such gives its rows', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const response = await upload(h, a.key, { type: 'gender', delimiter: 'semicolon', encoding: 'windows-1252' }, { file: Buffer.from(CSV, 'latin1') });
    expect(response.statusCode).toBe(202);
    const { id } = json(response);
    await runUntilDone(h, [id]);
    const done = json(await h.app.inject({ method: 'GET', url: `/api/jobs/${id}`, headers: bearer(a.key) }));
    expect(done).toMatchObject({ status: 'completed', rows: { total: 2 } });
    const download = await h.app.inject({ method: 'GET', url: `/api/jobs/${id}/download?filter=all`, headers: bearer(a.key) });
    const location = download.headers.location as string | undefined;
    const bytes = location ? Buffer.from(await (await fetch(location)).arrayBuffer()) : download.rawPayload;
    expect((await resultRecords(bytes)).map((r) => r.name)).toEqual(['María', 'John']);
  });

  it('each option is part of the Idempotency-Key fingerprint', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 100 });
    const first = await upload(h, a.key, { type: 'gender' }, { idempotencyKey: 'input-1' });
    expect(first.statusCode).toBe(202);
    const variants: Record<string, string>[] = [{ delimiter: 'semicolon' }, { encoding: 'windows-1252' }, { country_column: 'country' }, { excel: 'true' }];
    for (const fields of variants) {
      const other = await upload(h, a.key, { type: 'gender', ...fields }, { idempotencyKey: 'input-1' });
      expect(other.statusCode, JSON.stringify(fields)).toBe(422);
      expect(json(other).code).toBe('idempotency_conflict');
    }
    const again = await upload(h, a.key, { type: 'gender' }, { idempotencyKey: 'input-1' });
    expect(json(again).id).toBe(json(first).id);
    // The same option written two ways is the same request.
    const semicolon = json(await upload(h, a.key, { type: 'gender', delimiter: ';' }, { idempotencyKey: 'input-2' }));
    const word = await upload(h, a.key, { type: 'gender', delimiter: 'semicolon' }, { idempotencyKey: 'input-2' });
    expect(json(word).id).toBe(semicolon.id);
  });
});

describe('input options of POST /api/phone-jobs', () => {
  it('a multipart phone job takes them, and refuses a bad one', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const file = 'phone|Land\n+49 30 1234567|DE\n';
    const ok = await upload(h, a.key, { feature: 'breaches', delimiter: 'pipe', country_column: 'Land', excel: 'true' }, { url: '/api/phone-jobs', file });
    expect(ok.statusCode).toBe(202);
    expect((await h.engine.deps.jobs.require(json(ok).id)).options).toMatchObject({ delimiter: '|', countryColumn: 'Land', excel: true });
    const bad = await upload(h, a.key, { feature: 'breaches', encoding: 'klingon' }, { url: '/api/phone-jobs', file });
    expect(bad.statusCode).toBe(422);
    expect(json(bad).code).toBe('unknown_encoding');
  });

  it('a JSON phone job takes excel, and refuses the options that only a file has', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 10 });
    const post = (payload: Record<string, unknown>) =>
      h.app.inject({ method: 'POST', url: '/api/phone-jobs', headers: bearer(a.key), payload: { feature: 'breaches', numbers: ['+49 30 1234567'], ...payload } });
    const ok = await post({ excel: true });
    expect(ok.statusCode).toBe(202);
    expect((await h.engine.deps.jobs.require(json(ok).id)).options).toMatchObject({ excel: true });
    for (const payload of [{ excel: 'yes' }, { delimiter: ';' }, { encoding: 'utf-8' }, { country_column: 'country' }]) {
      const refused = await post(payload);
      expect(refused.statusCode, JSON.stringify(payload)).toBe(422);
      expect(json(refused).code).toBe('invalid_request');
    }
  });
});
