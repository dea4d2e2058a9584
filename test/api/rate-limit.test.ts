import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { accountsCommand } from '../../src/cli/accounts-command.js';
import type { CliIo } from '../../src/cli/cli-io.js';
import { FakeClock } from '../../src/shared/clock.js';
import {
  addKey,
  bearer,
  closeHarnesses,
  expectNoLeak,
  json,
  listen,
  newAccount,
  openApiHarness,
  uploadCsv,
  type ApiHarness,
} from '../support/api-harness.js';

afterEach(closeHarnesses);

/** The cheap authenticated route the budget is spent on. */
function list(h: ApiHarness, key: string): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: 'GET', url: '/api/jobs', headers: bearer(key) });
}

function limits(r: { headers: Record<string, unknown> }) {
  const n = (name: string) => (r.headers[name] === undefined ? undefined : Number(r.headers[name]));
  return { limit: n('x-ratelimit-limit'), remaining: n('x-ratelimit-remaining'), reset: n('x-ratelimit-reset'), retryAfter: n('retry-after') };
}

async function spend(h: ApiHarness, key: string, count: number): Promise<LightMyRequestResponse[]> {
  const out: LightMyRequestResponse[] = [];
  for (let i = 0; i < count; i++) out.push(await list(h, key));
  return out;
}

const quietIo = (): CliIo => {
  const sink = { write: () => true } as unknown as NodeJS.WriteStream;
  return { stdout: sink, stderr: sink };
};

describe('the per-account rolling minute', () => {
  it('lets 200 requests through, counting down, and refuses the 201st with 429 and consistent headers', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);

    const started = Math.floor(Date.now() / 1000);
    const allowed = await spend(h, a.key, 200);
    allowed.forEach((r, i) => {
      expect(r.statusCode).toBe(200);
      const l = limits(r);
      expect(l.limit).toBe(200);
      expect(l.remaining).toBe(199 - i);
      expect(r.headers['retry-after']).toBeUndefined();
      // Absolute Unix seconds, about a minute ahead: not a delay.
      expect(l.reset).toBeGreaterThanOrEqual(started + 59);
      expect(l.reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 61);
    });

    const refused = await list(h, a.key);
    const now = Date.now() / 1000;
    expect(refused.statusCode).toBe(429);
    const l = limits(refused);
    expect(l).toMatchObject({ limit: 200, remaining: 0 });
    expect(Number.isInteger(l.retryAfter)).toBe(true);
    expect(l.retryAfter).toBeGreaterThanOrEqual(1);
    // Whole seconds from the current second to the (rounded-up) reset: at most one over the window.
    expect(l.retryAfter).toBeLessThanOrEqual(61);
    expect(Math.abs(l.reset! - now - l.retryAfter!)).toBeLessThanOrEqual(1);
    expect(l.reset).toBe(limits(allowed[0]!).reset);
    expect(json(refused).error).toEqual(expect.any(String));
    expectNoLeak(refused.body);
  });

  it('gives the same answer over a real socket', async () => {
    const h = await openApiHarness({ SLUICE_RATE_LIMIT_PER_MINUTE: '3' });
    const a = await newAccount(h);
    const base = await listen(h);
    const statuses: number[] = [];
    let last: Response | undefined;
    for (let i = 0; i < 4; i++) {
      last = await fetch(`${base}/api/jobs`, { headers: bearer(a.key) });
      statuses.push(last.status);
      await last.arrayBuffer();
    }
    expect(statuses).toEqual([200, 200, 200, 429]);
    const now = Date.now() / 1000;
    const reset = Number(last!.headers.get('x-ratelimit-reset'));
    const retryAfter = Number(last!.headers.get('retry-after'));
    expect(last!.headers.get('x-ratelimit-limit')).toBe('3');
    expect(last!.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Math.abs(reset - now - retryAfter)).toBeLessThanOrEqual(1);
  });

  it('is shared by all keys of an account, and another account is unaffected', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const second = await addKey(h, a.id, 'readonly');
    const b = await newAccount(h);

    const first = await spend(h, a.key, 100);
    const rest = await spend(h, second.key, 100);
    expect([...first, ...rest].every((r) => r.statusCode === 200)).toBe(true);
    expect(limits(rest[99]!).remaining).toBe(0);

    for (const key of [a.key, second.key]) {
      const r = await list(h, key);
      expect(r.statusCode).toBe(429);
      expect(limits(r)).toMatchObject({ limit: 200, remaining: 0 });
    }
    // A new key of the same account does not get a fresh budget either.
    const third = await addKey(h, a.id);
    expect((await list(h, third.key)).statusCode).toBe(429);

    const other = await list(h, b.key);
    expect(other.statusCode).toBe(200);
    expect(limits(other)).toMatchObject({ limit: 200, remaining: 199 });
  });

  it('rolls: requests leave the window one minute after they were let through', async () => {
    const clock = new FakeClock(Date.UTC(2026, 0, 1, 12, 0, 0, 250));
    const h = await openApiHarness({}, clock);
    const a = await newAccount(h);
    const t0 = clock.now();

    await spend(h, a.key, 100);
    clock.advance(30_000);
    await spend(h, a.key, 100);
    clock.advance(29_000);

    const refused = await list(h, a.key);
    expect(refused.statusCode).toBe(429);
    const l = limits(refused);
    expect(l.reset).toBe(Math.ceil((t0 + 60_000) / 1000));
    expect(l.reset! - Math.floor(clock.now() / 1000)).toBe(l.retryAfter);

    // At the reset time the first hundred have left the window, the second hundred have not.
    clock.set(l.reset! * 1000);
    const again = await list(h, a.key);
    expect(again.statusCode).toBe(200);
    expect(limits(again)).toMatchObject({ limit: 200, remaining: 99 });
    expect(limits(again).reset).toBe(Math.ceil((t0 + 30_000 + 60_000) / 1000));
  });
});

describe('per-account overrides', () => {
  it('sluice accounts rate-limit applies to the running server at once, and `default` restores 200', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    const b = await newAccount(h);

    expect(await accountsCommand(h.engine, ['rate-limit', a.id, '5'], quietIo())).toBe(0);
    const five = await spend(h, a.key, 6);
    expect(five.map((r) => r.statusCode)).toEqual([200, 200, 200, 200, 200, 429]);
    expect(five.map((r) => limits(r).limit)).toEqual([5, 5, 5, 5, 5, 5]);
    expect(five.map((r) => limits(r).remaining)).toEqual([4, 3, 2, 1, 0, 0]);
    expect(limits((await list(h, b.key)))).toMatchObject({ limit: 200 });

    expect(await accountsCommand(h.engine, ['rate-limit', a.id, 'default'], quietIo())).toBe(0);
    const back = await list(h, a.key);
    expect(back.statusCode).toBe(200);
    expect(limits(back)).toMatchObject({ limit: 200, remaining: 200 - 6 });
  });

  it('billing.setRateLimit raises the limit above the default', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h);
    await h.engine.deps.billing.setRateLimit(a.id, 250);
    const all = await spend(h, a.key, 251);
    expect(all.slice(0, 250).every((r) => r.statusCode === 200)).toBe(true);
    expect(all[250]!.statusCode).toBe(429);
    expect(limits(all[250]!)).toMatchObject({ limit: 250, remaining: 0 });
  });
});

describe('headers on every authenticated response', () => {
  it('success and error answers alike carry the limit state', async () => {
    const h = await openApiHarness();
    const a = await newAccount(h, { credits: 0 });
    const readonly = await addKey(h, a.id, 'readonly');

    const answers: [string, LightMyRequestResponse][] = [
      ['list 200', await list(h, a.key)],
      ['unknown job 404', await h.app.inject({ method: 'GET', url: '/api/jobs/job_nope', headers: bearer(a.key) })],
      ['gender 402', await h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(a.key), payload: { email: 'maria@example.com' } })],
      ['gender 400', await h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(a.key), payload: { email: 'nope' } })],
      ['bulk 402', await uploadCsv(h, a.key, 'email\nmaria@example.com\n')],
      ['readonly 403', await h.app.inject({ method: 'PATCH', url: `/api/account/keys?id=${a.keyId}&action=disable`, headers: bearer(readonly.key) })],
      ['create key 400', await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(a.key), payload: {} })],
      ['list 422 (bad query)', await h.app.inject({ method: 'GET', url: '/api/jobs?limit=1000', headers: bearer(a.key) })],
      ['create key 422 (bad body)', await h.app.inject({ method: 'POST', url: '/api/account/keys', headers: bearer(a.key), payload: { name: 'x', role: 'root' } })],
      ['download 422 (bad filter)', await h.app.inject({ method: 'GET', url: '/api/jobs/job_x/download?filter=nope', headers: bearer(a.key) })],
    ];
    const missing = answers.filter(([, r]) => limits(r).limit === undefined || limits(r).remaining === undefined || limits(r).reset === undefined).map(([name, r]) => `${name} (${r.statusCode})`);
    expect(missing).toEqual([]);
    // Each of them spent one request of the budget.
    expect(limits(await list(h, a.key)).remaining).toBe(200 - answers.length - 1);
  });

  it('a refused lookup is not billed, and a refused upload makes no job', async () => {
    const h = await openApiHarness({ SLUICE_RATE_LIMIT_PER_MINUTE: '1' });
    const a = await newAccount(h, { credits: 10 });
    expect((await list(h, a.key)).statusCode).toBe(200);

    const gender = await h.app.inject({ method: 'POST', url: '/api/email/gender', headers: bearer(a.key), payload: { email: 'maria.rossi@example.com' } });
    expect(gender.statusCode).toBe(429);
    const upload = await uploadCsv(h, a.key, 'email\nmaria@example.com\n');
    expect(upload.statusCode).toBe(429);
    expect(upload.headers['retry-after']).toBeDefined();
    expect((await h.engine.deps.billing.requireAccount(a.id)).credits).toBe(10);
    expect((await h.engine.deps.jobs.list({ accountId: a.id, limit: 10, offset: 0 })).total).toBe(0);
  });
});
