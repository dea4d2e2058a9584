import { afterAll, describe, expect, it } from 'vitest';
import type { Resolver } from '../../src/webhooks/address-policy.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, uploadCsv, type ApiHarness } from '../support/api-harness.js';
import { startEnrichWorld } from '../support/enrich-world.js';
import { startRangeFake } from '../support/range-provider-fake.js';
import { headerCases, PATH_VALUES, SchemaSampler, type FuzzCase } from '../support/fuzz-inputs.js';
import { OpenApiResponseCheck } from '../support/openapi-response-check.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 27, item 10: every operation of the OpenAPI document, sent inputs derived from its own
 * schemas and broken one way at a time (test/support/fuzz-inputs.ts), with one account's key and
 * another account's ids in the paths. Every answer must be below 500, in the document (status,
 * media type, body), an error in the spec's shape with a stable code; no request may read or change
 * the other account's data.
 *
 * Nothing leaves loopback: DNS, SMTP, RDAP and HTTPS go to the enrich world's fakes, webhook and
 * repository host names to a table, and the Telegram API to a closed loopback port.
 */
const NAMES: Record<string, string> = { 'hooks.example.com': '93.184.215.14' };
const resolve: Resolver = async (hostname) => {
  const address = NAMES[hostname];
  if (!address) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
  return [{ address, family: 4 }];
};

const stoppers: Array<() => Promise<void>> = [];
afterAll(async () => {
  await closeHarnesses();
  for (const stop of stoppers.splice(0)) await stop();
});

interface Victim {
  key: string;
  ids: string[];
  snapshot: () => Promise<string>;
}

/** An account with one of everything, and a snapshot of all of it as its own key reads it. */
async function victim(h: ApiHarness): Promise<Victim> {
  const b = await newAccount(h, { credits: 500 });
  const call = async (method: 'GET' | 'POST', url: string, payload?: object) => {
    const r = await h.app.inject({ method, url, headers: bearer(b.key), ...(payload ? { payload } : {}) });
    expect(r.statusCode, `${method} ${url}: ${r.body}`).toBeLessThan(300);
    return json(r);
  };
  const list = await call('POST', '/api/lists', { name: 'victim', type: 'email', targets: ['v@example.com'] });
  const monitor = await call('POST', '/api/monitors', { name: 'victim', type: 'email', frequency: 'weekly', list_id: list.id });
  const webhook = (await call('POST', '/api/webhooks', { url: 'https://hooks.example.com/victim' })).result;
  const job = json(await uploadCsv(h, b.key, 'email\nvictim@example.com\n'));
  const workflow = await call('POST', '/api/workflows', { name: 'victim', steps: [{ id: 'wait', type: 'delay', config: { seconds: 60 } }] });
  const ids = [list.id, monitor.id, webhook.id, job.id, workflow.id, b.keyId];
  const snapshot = async () =>
    JSON.stringify(
      await Promise.all([
        call('GET', `/api/lists/${list.id}`),
        call('GET', `/api/monitors/${monitor.id}`),
        call('GET', `/api/monitors/${monitor.id}/targets`),
        call('GET', `/api/webhooks/${webhook.id}`),
        call('GET', `/api/jobs/${job.id}`),
        call('GET', `/api/workflows/${workflow.id}`),
        call('GET', '/api/account/keys'),
        call('GET', '/api/account/credit-alert'),
        call('GET', '/api/account').then((a: Record<string, unknown>) => ({ ...a, rate_limit: undefined })),
      ]),
    );
  return { key: b.key, ids, snapshot };
}

/** The spec's error shapes (spec 7), with a stable code wherever a key was given. */
function errorShapeProblem(path: string, status: number, body: string): string | undefined {
  let parsed: any;
  try {
    parsed = JSON.parse(body);
  } catch {
    return `not JSON: ${body.slice(0, 80)}`;
  }
  if (path.startsWith('/api/webhooks')) {
    return parsed?.success === false && typeof parsed.result?.code === 'string' && typeof parsed.message === 'string' ? undefined : 'not the webhook error envelope';
  }
  if (path.startsWith('/api/agent') && status === 401) return parsed?.c === 401 && typeof parsed.m === 'string' ? undefined : 'not {c, m}';
  if (typeof parsed?.error !== 'string') return 'no error message';
  // 401 bodies are the spec's exact texts, without a code; every other refusal names its code.
  if (status !== 401 && !/^[a-z][a-z0-9_]*$/.test(parsed.code ?? '')) return `no stable code (${JSON.stringify(parsed.code)})`;
  return undefined;
}

describe.each(TEST_STORES)('the fuzz pass over every operation, on %s', (kind) => {
  it('answers every bad or edge input below 500, as documented, and never touches another account', { timeout: 600_000 }, async () => {
    const world = await startEnrichWorld();
    stoppers.push(() => world.stop());
    const range = await startRangeFake([{ hash: '21BD12DC183F740EE76F27B78EB39C8AD972A757', count: 42 }]);
    stoppers.push(() => range.close());
    const h = await openStoreHarness(
      kind,
      { ...world.env, SLUICE_PASSWORD_RANGE_URL: `${range.url}/`, SLUICE_RATE_LIMIT_PER_MINUTE: '1000000', SLUICE_TELEGRAM_API_URL: 'http://127.0.0.1:9' },
      undefined,
      { resolve },
    );
    const target = await victim(h);
    const before = await target.snapshot();
    const attacker = await newAccount(h, { credits: 100 });
    const doc = json(await h.app.inject({ method: 'GET', url: '/api/openapi.json' }));
    const sampler = new SchemaSampler(doc);
    const responses = new OpenApiResponseCheck(doc);

    const problems: string[] = [];
    let sent = 0;
    for (const [template, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries(item)) {
        const params = (template.match(/\{(\w+)\}/g) ?? []).map((p) => p.slice(1, -1));
        const at = (value: string) => template.replace(/\{\w+\}/g, value);
        const route = template.replace(/\{(\w+)\}/g, ':$1');
        const sample = sampler.bodyCases(op)[0]!;
        // The other account's ids, and values that name nothing, in every path parameter.
        const requests: Array<{ path: string; c: FuzzCase; foreign: boolean }> = params.length === 0 ? [] : [
          ...target.ids.map((id) => ({ path: at(id), c: sample, foreign: true })),
          ...PATH_VALUES.map((v) => ({ path: at(v), c: sample, foreign: false })),
        ];
        const base = params.length === 0 ? template : at(target.ids[0]!);
        for (const c of [...sampler.bodyCases(op), ...sampler.queryCases(op), ...headerCases(op).map((h) => ({ ...h, body: sample.body }))]) requests.push({ path: base, c, foreign: params.length > 0 });
        requests.push({ path: base, c: { name: 'a made-up key', body: sample.body }, foreign: params.length > 0 });

        for (const { path, c, foreign } of requests) {
          const withBody = method !== 'get' && (c.body !== undefined || c.raw !== undefined);
          const key = c.name === 'a made-up key' ? 'sluice_' + 'A'.repeat(36) : attacker.key;
          const r = await h.app.inject({
            method: method.toUpperCase() as 'GET',
            url: path,
            ...(c.query ? { query: c.query } : {}),
            headers: { ...bearer(key), ...(withBody ? { 'content-type': c.raw?.contentType ?? 'application/json' } : {}), ...c.headers },
            ...(withBody ? { payload: c.raw?.payload ?? JSON.stringify(c.body) } : {}),
          });
          sent++;
          const where = `${method.toUpperCase()} ${path.slice(0, 120)} (${c.name})`;
          if (r.statusCode >= 500) problems.push(`${where}: ${r.statusCode} ${r.body.slice(0, 200)}`);
          if (foreign && r.statusCode < 400) problems.push(`${where}: ${r.statusCode} with another account's id`);
          if (r.statusCode >= 400) {
            const shape = errorShapeProblem(path, r.statusCode, r.body);
            if (shape) problems.push(`${where}: ${r.statusCode} ${shape}: ${r.body.slice(0, 120)}`);
          }
          const matched = r.statusCode === 404 && !doc.paths[template] ? undefined : route;
          if (matched) {
            for (const p of responses.check({ method: method.toUpperCase(), route: matched, status: r.statusCode, contentType: r.headers['content-type'] as string | undefined, body: r.body })) {
              problems.push(`${where}: ${p}`);
            }
          }
        }
      }
    }
    expect(sent, `${sent} requests sent`).toBeGreaterThan(2_000);
    console.info(`fuzz pass on ${kind}: ${sent} requests`);
    expect([...new Set(problems)]).toEqual([]);
    expect(await target.snapshot()).toBe(before);
  });
});
