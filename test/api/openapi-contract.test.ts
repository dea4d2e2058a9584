import { afterAll, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, multipart, newAccount, openStoreHarness, runUntilDone, type ApiHarness, type Part } from '../support/api-harness.js';
import { OpenApiRequestCheck } from '../support/openapi-request-check.js';
import { OpenApiResponseCheck } from '../support/openapi-response-check.js';
import { TEST_STORES } from '../support/test-engine.js';
import { startReceiver, type Receiver } from '../support/webhook-receiver.js';
import { startEnrichWorld } from '../support/enrich-world.js';
import { startRangeFake } from '../support/range-provider-fake.js';
import { harnessSeeder } from '../monitors/result-fixtures.js';
import { CORPUS, type CorpusRequest } from './contract-corpus.js';

/**
 * The contract check: a corpus of real requests replayed against the API, each request checked
 * against the document before it is sent (what Prism's validating proxy refuses) and each answer
 * after (status, media type, body). Together with the check every API suite makes of its answers,
 * the document cannot drift from the code.
 */
const receivers: Receiver[] = [];
const stoppers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const r of receivers.splice(0)) await r.close();
  await closeHarnesses();
  for (const stop of stoppers.splice(0)) await stop();
});

describe.each(TEST_STORES)('the corpus of real requests, replayed on %s', (kind) => {
  it('meets the document at every request and every answer, and covers every operation', async () => {
    const receiver = await startReceiver({ protocol: 'http' });
    receivers.push(receiver);
    // The email and password routes' fakes, all on loopback: DNS, SMTP, RDAP, HTTPS; a range service.
    const world = await startEnrichWorld();
    stoppers.push(() => world.stop());
    const range = await startRangeFake([{ hash: '21BD12DC183F740EE76F27B78EB39C8AD972A757', count: 42 }]);
    stoppers.push(() => range.close());
    const h: ApiHarness = await openStoreHarness(kind, { ...world.env, SLUICE_PASSWORD_RANGE_URL: `${range.url}/`, SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    const account = await newAccount(h, { credits: 10_000 });
    const doc = json(await h.app.inject({ method: 'GET', url: '/api/openapi.json' }));
    const requests = new OpenApiRequestCheck(doc);
    const responses = new OpenApiResponseCheck(doc);
    const vars: Record<string, string> = { email: account.email, password: account.password, receiver: receiver.url };
    const fill = (text: string) => text.replace(/\{(\w+)\}/g, (whole, name: string) => vars[name] ?? whole);
    const fillDeep = (value: unknown): unknown =>
      typeof value === 'string' ? fill(value) : Array.isArray(value) ? value.map(fillDeep) : value && typeof value === 'object' ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, fillDeep(v)])) : value;

    const problems: string[] = [];
    const covered = new Set<string>();
    const jobs: string[] = [];
    for (const step of CORPUS) {
      if ('action' in step) {
        if (step.action === 'work') await runUntilDone(h, jobs);
        else await seedRun(h, account.id, vars);
        continue;
      }
      const sent = await replay(h, step, account.key, vars, fill, fillDeep, requests, problems, covered);
      const where = `${step.name}: ${step.method} ${fill(step.path)}`;
      expect(sent.statusCode, `${where}: ${sent.body.slice(0, 300)}`).toBe(step.status);
      const found = requests.operationKey(step.method, fill(step.path))!;
      problems.push(...responses.check({ method: step.method, route: found.template, status: sent.statusCode, contentType: sent.headers['content-type'] as string | undefined, body: sent.body }).map((p) => `${step.name}: ${p}`));
      if (step.path === '/api/jobs/bulk' && step.status === 202) jobs.push(json(sent).id);
      for (const [name, at] of Object.entries(step.capture ?? {})) {
        vars[name] = String(at.split('.').reduce<any>((v, k) => v?.[k], json(sent)));
      }
    }
    expect(problems).toEqual([]);
    const operations = Object.entries<Record<string, unknown>>(doc.paths).flatMap(([path, item]) => Object.keys(item).map((m) => `${m.toUpperCase()} ${path}`));
    expect(operations.filter((op) => !covered.has(op)), 'operations the corpus never calls').toEqual([]);
  });
});

async function replay(
  h: ApiHarness,
  step: CorpusRequest,
  key: string,
  vars: Record<string, string>,
  fill: (text: string) => string,
  fillDeep: (value: unknown) => unknown,
  check: OpenApiRequestCheck,
  problems: string[],
  covered: Set<string>,
) {
  const path = fill(step.path);
  const query = Object.fromEntries(Object.entries(step.query ?? {}).map(([k, v]) => [k, fill(v)]));
  const auth = step.as === 'none' ? {} : bearer(step.as === 'session' ? vars.session! : key);
  let payload: string | Buffer | undefined;
  let contentType: string | undefined;
  let form: { fields: Record<string, string | string[]>; files: string[] } | undefined;
  let wireType: string | undefined;
  if (step.json !== undefined) {
    payload = JSON.stringify(fillDeep(step.json));
    contentType = 'application/json';
    wireType = contentType;
  } else if (step.form) {
    const parts: Part[] = step.form.fields.map(([name, value]) => ({ name, value: fill(value) }));
    if (step.form.file) parts.push({ name: step.form.file.name, value: step.form.file.content, filename: 'input.csv' });
    const body = multipart(parts);
    payload = body.payload;
    contentType = 'multipart/form-data';
    const fields: Record<string, string | string[]> = {};
    // A field sent more than once (`lookup`) is an array in the document's form schema.
    for (const [name, value] of step.form.fields) fields[name] = name === 'lookup' ? [...((fields[name] as string[] | undefined) ?? []), fill(value)] : fill(value);
    form = { fields, files: step.form.file ? [step.form.file.name] : [] };
    wireType = body.headers['content-type'];
  }
  const headers = { ...auth, ...(step.headers ?? {}) };
  const found = check.operationKey(step.method, path);
  if (found) covered.add(found.key);
  problems.push(...check.check({ method: step.method, path, query, headers, contentType, json: step.json === undefined ? undefined : JSON.parse(payload as string), form }).map((p) => `${step.name}: ${p}`));
  return h.app.inject({ method: step.method, url: path, query, headers: { ...headers, ...(wireType ? { 'content-type': wireType } : {}) }, ...(payload === undefined ? {} : { payload }) });
}

/** A finished run of the corpus's monitor, recorded in the store as the monitor runner would. */
async function seedRun(h: ApiHarness, accountId: string, vars: Record<string, string>): Promise<void> {
  const seeder = await harnessSeeder(h);
  try {
    vars.run = 'corpus-run';
    await seeder.seed({
      id: 'corpus-run',
      monitorId: vars.monitor!,
      accountId,
      createdAt: h.engine.deps.clock.now(),
      snapshots: [
        { target: 'anna.schmidt@example.com', data: { breached: true, count: 2 }, changes: { count: { old: 1, new: 2 } } },
        { target: 'john.smith@example.org', data: { breached: false, count: 0 } },
      ],
    });
  } finally {
    await seeder.close();
  }
}
