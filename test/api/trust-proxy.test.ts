import type { LightMyRequestResponse } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ADDRESS_POLICY } from '../../src/auth/login-throttle.js';
import { loadConfig } from '../../src/config/load-config.js';
import { AppError } from '../../src/shared/errors.js';
import { FakeClock } from '../../src/shared/clock.js';
import { closeHarnesses, openApiHarness, type ApiHarness } from '../support/api-harness.js';

/**
 * SLUICE_TRUST_PROXY: behind a reverse proxy every request comes from the proxy's address, so the
 * login throttle's per-address count would lump every client together; believing X-Forwarded-For
 * from anyone else would let a client pick a fresh address for each guess. The store is not what
 * is under test here (the throttle's own suite runs on both), so these run on SQLite.
 */
afterEach(closeHarnesses);

const WRONG = 'not the password';
let sprayed = 0;

/** A failed login under a new email each time, so that only the per-address count can refuse it. */
function spray(h: ApiHarness, peer: string, forwardedFor?: string): Promise<LightMyRequestResponse> {
  return h.app.inject({
    method: 'POST',
    url: '/api/auth/login',
    payload: { email: `spray-${++sprayed}@example.com`, password: WRONG },
    remoteAddress: peer,
    headers: forwardedFor === undefined ? {} : { 'x-forwarded-for': forwardedFor },
  });
}

/** Spends the whole per-address allowance; every attempt is a plain 401. */
async function exhaust(h: ApiHarness, peer: string, forwardedFor: (i: number) => string | undefined): Promise<void> {
  for (let i = 0; i < ADDRESS_POLICY.failures; i++) expect((await spray(h, peer, forwardedFor(i))).statusCode).toBe(401);
}

describe('the login throttle behind a reverse proxy', () => {
  it('with SLUICE_TRUST_PROXY unset, ignores X-Forwarded-For: a forged address per attempt still hits the real one', async () => {
    const h = await openApiHarness({}, new FakeClock());
    await exhaust(h, '127.0.0.7', (i) => `198.51.100.${i + 1}`);
    expect((await spray(h, '127.0.0.7', '198.51.100.200')).statusCode).toBe(429);
    expect((await spray(h, '127.0.0.7')).statusCode).toBe(429);
    expect((await spray(h, '127.0.0.8', '198.51.100.200')).statusCode).toBe(401);
  });

  it('with SLUICE_TRUST_PROXY=127.0.0.1, counts each forwarded client apart', async () => {
    const h = await openApiHarness({ SLUICE_TRUST_PROXY: '127.0.0.1' }, new FakeClock());
    await exhaust(h, '127.0.0.1', () => '198.51.100.1');
    expect((await spray(h, '127.0.0.1', '198.51.100.1')).statusCode).toBe(429);
    expect((await spray(h, '127.0.0.1', '198.51.100.2')).statusCode).toBe(401);
    // An entry the client wrote in front of the proxy's own is not believed: the proxy saw .1.
    expect((await spray(h, '127.0.0.1', '203.0.113.9, 198.51.100.1')).statusCode).toBe(429);
  });

  it('with SLUICE_TRUST_PROXY=127.0.0.1, ignores the header from any other peer', async () => {
    const h = await openApiHarness({ SLUICE_TRUST_PROXY: '127.0.0.1' }, new FakeClock());
    await exhaust(h, '127.0.0.5', (i) => `198.51.100.${i + 1}`);
    expect((await spray(h, '127.0.0.5', '198.51.100.200')).statusCode).toBe(429);
    expect((await spray(h, '127.0.0.1', '198.51.100.200')).statusCode).toBe(401);
  });
});

describe('SLUICE_TRUST_PROXY', () => {
  it.each([
    ['127.0.0.1', ['127.0.0.1']],
    ['10.0.0.0/8, 192.168.1.7', ['10.0.0.0/8', '192.168.1.7']],
    ['loopback,uniquelocal', ['loopback', 'uniquelocal']],
    ['::1, fd00::/8', ['::1', 'fd00::/8']],
  ])('takes %j', (raw, list) => {
    expect(loadConfig({ SLUICE_TRUST_PROXY: raw }).api.trustProxy).toEqual(list);
  });

  it('is unset by default', () => {
    expect(loadConfig({}).api.trustProxy).toBeUndefined();
  });

  it.each([
    ['a hop count', '1', 'hop count'],
    ['true', 'true', '"true"'],
    ['a host name', 'proxy.internal', '"proxy.internal"'],
    ['a /0 range, which is everyone', '0.0.0.0/0', '"0.0.0.0/0"'],
    ['an IPv4 prefix above 32', '10.0.0.0/33', '"10.0.0.0/33"'],
    ['a list of nothing', ' , ', 'at least one'],
  ])('refuses %s with bad_config', (_what, raw, said) => {
    let error: unknown;
    try {
      loadConfig({ SLUICE_TRUST_PROXY: raw });
    } catch (e: unknown) {
      error = e;
    }
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe('bad_config');
    expect((error as AppError).message).toContain('SLUICE_TRUST_PROXY');
    expect((error as AppError).message).toContain(said);
  });
});
