import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { addressKey, ADDRESS_POLICY, EMAIL_POLICY } from '../../src/auth/login-throttle.js';
import { HashGate, PASSWORD_HASHES } from '../../src/auth/passwords.js';
import { FakeClock } from '../../src/shared/clock.js';
import { isAppError } from '../../src/shared/errors.js';
import { closeHarnesses, json, newAccount, openApiHarness, type ApiHarness } from '../support/api-harness.js';
import { storeEnv, TEST_STORES } from '../support/test-engine.js';

/** Every scrypt of this process, counted from its call to its callback: the thread-pool work in flight. */
const scrypts = vi.hoisted(() => ({ calls: 0, inFlight: 0, max: 0 }));

vi.mock('node:crypto', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:crypto')>();
  const scrypt = (...args: unknown[]): void => {
    const done = args.pop() as (err: Error | null, key: Buffer) => void;
    scrypts.calls++;
    scrypts.inFlight++;
    scrypts.max = Math.max(scrypts.max, scrypts.inFlight);
    (real.scrypt as (...a: unknown[]) => void)(...args, (err: Error | null, key: Buffer) => {
      scrypts.inFlight--;
      done(err, key);
    });
  };
  return { ...real, scrypt, default: { ...real, scrypt } };
});

const drops: (() => Promise<void>)[] = [];
afterEach(async () => {
  await closeHarnesses();
  await Promise.all(drops.splice(0).map((drop) => drop()));
});

const WRONG = 'not the password';

function login(h: ApiHarness, email: string, password: string, remoteAddress = '127.0.0.1'): Promise<LightMyRequestResponse> {
  return h.app.inject({ method: 'POST', url: '/api/auth/login', payload: { email, password }, remoteAddress });
}

function refusal(r: LightMyRequestResponse): { status: number; code: unknown; retryAfter: string | undefined } {
  return { status: r.statusCode, code: json(r).code, retryAfter: r.headers['retry-after'] as string | undefined };
}

describe.each(TEST_STORES)('login throttling on %s', (store) => {
  async function harness(clock: FakeClock, env?: Record<string, string>): Promise<ApiHarness> {
    if (env) return openApiHarness(env, clock);
    const placed = await storeEnv(store);
    drops.push(placed.drop);
    return openApiHarness(placed.env, clock);
  }

  it('refuses the 6th attempt on one email with 429 and Retry-After, the right password too and with no hash, until the lockout ends', async () => {
    const clock = new FakeClock();
    const h = await harness(clock);
    const account = await newAccount(h);
    for (let i = 0; i < EMAIL_POLICY.failures; i++) expect((await login(h, account.email, WRONG)).statusCode).toBe(401);

    const hashesBefore = scrypts.calls;
    expect(refusal(await login(h, account.email, WRONG))).toEqual({ status: 429, code: 'too_many_attempts', retryAfter: '60' });
    // Another letter case and spaces are the same email, and the right password is refused as well.
    expect(refusal(await login(h, ` ${account.email.toUpperCase()}`, account.password))).toEqual({ status: 429, code: 'too_many_attempts', retryAfter: '60' });
    expect(scrypts.calls, 'a refused attempt computed a hash').toBe(hashesBefore);

    clock.advance(30_000);
    expect(refusal(await login(h, account.email, account.password)).retryAfter).toBe('30');
    clock.advance(30_000);
    expect((await login(h, account.email, account.password)).statusCode).toBe(200);
  });

  it('doubles the lockout with each failure past the threshold, and a success starts the email afresh', async () => {
    const clock = new FakeClock();
    const h = await harness(clock);
    const account = await newAccount(h);
    for (let i = 0; i < EMAIL_POLICY.failures; i++) await login(h, account.email, WRONG);
    const waits: string[] = [];
    for (const wait of [60, 120, 240]) {
      const refused = await login(h, account.email, WRONG);
      waits.push(refusal(refused).retryAfter ?? 'none');
      clock.advance(wait * 1000);
      expect((await login(h, account.email, WRONG)).statusCode).toBe(401);
    }
    expect(waits).toEqual(['60', '120', '240']);
    clock.advance(480_000);
    expect((await login(h, account.email, account.password)).statusCode).toBe(200);
    // Afresh: the full allowance of failures again before any refusal.
    for (let i = 0; i < EMAIL_POLICY.failures; i++) expect((await login(h, account.email, WRONG)).statusCode).toBe(401);
    expect(refusal(await login(h, account.email, WRONG)).retryAfter).toBe('60');
  });

  it('throttles an email with no account exactly as one with an account', async () => {
    const clock = new FakeClock();
    const h = await harness(clock);
    const account = await newAccount(h);
    const sequence = async (email: string): Promise<unknown[]> => {
      const seen: unknown[] = [];
      for (let i = 0; i < EMAIL_POLICY.failures + 2; i++) seen.push(refusal(await login(h, email, WRONG, '127.0.0.9')));
      clock.advance(60_000);
      seen.push(refusal(await login(h, email, WRONG, '127.0.0.9')), refusal(await login(h, email, WRONG, '127.0.0.9')));
      return seen;
    };
    const known = await sequence(account.email);
    const unknown = await sequence('nobody-here@example.com');
    expect(unknown).toEqual(known);
    expect(known.filter((r) => (r as { status: number }).status === 429)).toHaveLength(3);
  });

  it('refuses an address after 20 failures across many emails, while other addresses still log in', async () => {
    const clock = new FakeClock();
    const h = await harness(clock);
    const account = await newAccount(h);
    for (let i = 0; i < ADDRESS_POLICY.failures; i++) {
      expect((await login(h, `spray-${i}@example.com`, WRONG, '127.0.0.7')).statusCode).toBe(401);
    }
    const hashesBefore = scrypts.calls;
    expect(refusal(await login(h, 'spray-new@example.com', WRONG, '127.0.0.7'))).toEqual({ status: 429, code: 'too_many_attempts', retryAfter: '60' });
    expect(refusal(await login(h, account.email, account.password, '127.0.0.7')).status).toBe(429);
    expect(scrypts.calls).toBe(hashesBefore);
    expect((await login(h, account.email, account.password, '127.0.0.8')).statusCode).toBe(200);
    clock.advance(60_000);
    expect((await login(h, account.email, account.password, '127.0.0.7')).statusCode).toBe(200);
  });

  it('shares the counts between two API processes on one store', async () => {
    const clock = new FakeClock();
    const first = await harness(clock);
    const second = await harness(clock, first.engine.env);
    const account = await newAccount(first);
    for (let i = 0; i < 3; i++) expect((await login(first, account.email, WRONG)).statusCode).toBe(401);
    for (let i = 0; i < 2; i++) expect((await login(second, account.email, WRONG)).statusCode).toBe(401);
    expect(refusal(await login(first, account.email, account.password)).status).toBe(429);
    expect(refusal(await login(second, account.email, account.password)).status).toBe(429);
    clock.advance(60_000);
    expect((await login(second, account.email, account.password)).statusCode).toBe(200);
  });

  it('hashes at most two passwords at once however many logins arrive together', async () => {
    const clock = new FakeClock();
    const h = await harness(clock);
    const accounts = await Promise.all([0, 1, 2, 3, 4, 5].map(() => newAccount(h)));
    scrypts.max = 0;
    const attempts = [
      ...accounts.map((a, i) => login(h, a.email, a.password, `127.0.1.${i + 1}`)),
      ...accounts.map((_, i) => login(h, `stranger-${i}@example.com`, WRONG, `127.0.2.${i + 1}`)),
    ];
    const statuses = (await Promise.all(attempts)).map((r) => r.statusCode);
    expect(statuses).toEqual([...accounts.map(() => 200), ...accounts.map(() => 401)]);
    expect(scrypts.max).toBeGreaterThan(0);
    expect(scrypts.max).toBeLessThanOrEqual(PASSWORD_HASHES.concurrency);
  });

  it('answers 503 with Retry-After when more logins wait for a hash than the queue holds, and does not count them', async () => {
    const clock = new FakeClock();
    const h = await harness(clock);
    const account = await newAccount(h);
    let release = (): void => undefined;
    const held = new Promise<void>((resolve) => (release = resolve));
    const occupants = Array.from({ length: PASSWORD_HASHES.concurrency + PASSWORD_HASHES.queue }, () => PASSWORD_HASHES.run(() => held));
    try {
      for (let i = 0; i < EMAIL_POLICY.failures + 1; i++) {
        expect(refusal(await login(h, account.email, account.password))).toEqual({ status: 503, code: 'server_busy', retryAfter: '1' });
      }
    } finally {
      release();
      await Promise.all(occupants);
    }
    expect((await login(h, account.email, account.password)).statusCode).toBe(200);
  });
});

describe('the OpenAPI document', () => {
  it('lists the throttle\'s 429 and the busy 503 on POST /api/auth/login', async () => {
    const h = await openApiHarness();
    await h.app.ready();
    const doc = h.app.swagger() as unknown as { paths: Record<string, Record<string, { responses: Record<string, unknown> }>> };
    expect(Object.keys(doc.paths['/api/auth/login']?.post?.responses ?? {})).toEqual(expect.arrayContaining(['200', '401', '429', '503']));
  });
});

describe('HashGate', () => {
  it('runs at most `concurrency` at once, queues `queue` more in order, and refuses a bounded call past that', async () => {
    const gate = new HashGate(2, 1);
    const order: number[] = [];
    const releases: (() => void)[] = [];
    const task = (n: number) => () =>
      new Promise<void>((resolve) => {
        order.push(n);
        releases.push(resolve);
      });
    const runs = [gate.run(task(1)), gate.run(task(2)), gate.run(task(3))];
    await Promise.resolve();
    expect(order).toEqual([1, 2]);
    const refused = await gate.run(task(4)).catch((e: unknown) => e);
    expect(isAppError(refused, 'server_busy')).toBe(true);
    // Account creation waits however long the queue.
    const unbounded = gate.run(task(5), false);
    releases[0]?.();
    await runs[0];
    await vi.waitFor(() => expect(order).toEqual([1, 2, 3]));
    releases[1]?.();
    await vi.waitFor(() => expect(order).toEqual([1, 2, 3, 5]));
    releases[2]?.();
    releases[3]?.();
    await Promise.all([...runs, unbounded]);
  });
});

describe('addressKey', () => {
  it.each([
    ['127.0.0.7', '127.0.0.7'],
    ['::ffff:127.0.0.7', '127.0.0.7'],
    ['2001:db8:1:2::1', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff:0:0:9', '2001:db8:1:2::/64'],
    ['::1', '0:0:0:0::/64'],
  ])('counts %s as %s', (address, key) => {
    expect(addressKey(address)).toBe(key);
  });
});
