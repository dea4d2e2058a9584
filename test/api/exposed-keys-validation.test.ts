import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';

const LIVE = 'ghp_' + 'wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx';
const REVOKED = 'ghp_' + 'R3v0k3dTok3nQ7wZp9LmX2cVb8NkJ4hTy6Ds';
const SLACK = 'xoxb-' + '263594206564-2343594206574-FGqddMF8t08v8N7Oq4i57vs1';
const STRIPE = 'sk_live_' + '51HqLyjWDarjtT1zdp7dc9Xq2Lm4Np8Rt';
const CONTENT = `a = "${LIVE}"\nb = "${REVOKED}"\nSLACK=${SLACK}\nstripe_key = "${STRIPE}"\n`;

/** A loopback fake of the providers' identity calls; Stripe's never answers (a time-out). */
async function fakeProviders(): Promise<{ origin: string; seen: string[]; close: () => Promise<void> }> {
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${req.headers.authorization ?? ''}`);
    if (req.url === '/user') {
      res.writeHead(req.headers.authorization === `Bearer ${LIVE}` ? 200 : 401, { 'content-type': 'application/json' }).end('{"login":"someone"}');
    } else if (req.url === '/api/auth.test') {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error: 'token_revoked' }));
    }
    // /v1/balance: no answer at all.
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    seen,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

const scan = async (h: ApiHarness, key: string, config: Record<string, unknown>) =>
  json(await h.app.inject({ method: 'POST', url: '/api/lookup/breaches/exposed-keys', headers: bearer(key), payload: { content: CONTENT, config } })).result;

const fakes: Array<() => Promise<void>> = [];
afterEach(async () => {
  await closeHarnesses();
  for (const close of fakes.splice(0)) await close();
});

describe.each(TEST_STORES)('config.validate on %s', (store) => {
  it('asks each provider its harmless identity call: live, revoked, and unknown on a time-out', async () => {
    const fake = await fakeProviders();
    fakes.push(fake.close);
    const h = await openStoreHarness(store, {
      SLUICE_SECRET_SCAN_VALIDATOR_ORIGIN: fake.origin,
      SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true',
      SLUICE_SECRET_SCAN_VALIDATE_TIMEOUT_MS: '300',
    });
    const { key } = await newAccount(h);
    const r = await scan(h, key, { validate: true });
    const byLine = Object.fromEntries(r.findings.map((f: { start_line: number; validation: unknown }) => [f.start_line, f.validation]));
    expect(byLine[1]).toEqual({ status: 'live', confidence: 1, checked_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/) });
    expect(byLine[2]).toMatchObject({ status: 'revoked', confidence: 0.9 });
    expect(byLine[3]).toMatchObject({ status: 'revoked' });
    expect(byLine[4]).toMatchObject({ status: 'unknown', confidence: 0 });
    expect(r.summary).toMatchObject({ validated: 4, live: 1 });
    expect(fake.seen).toContain(`GET /user Bearer ${LIVE}`);
    expect(fake.seen).toContain(`POST /api/auth.test Bearer ${SLACK}`);

    // validate omitted: the deployment default (off); false: detection only. Nothing is asked.
    fake.seen.length = 0;
    const quiet = await scan(h, key, {});
    expect(quiet.findings.every((f: { validation: { status: string } }) => f.validation.status === 'not_checked')).toBe(true);
    expect(quiet.summary).toMatchObject({ validated: 0, live: 0 });
    expect(fake.seen).toEqual([]);
  });

  it('obeys the webhook address policy: with private addresses refused, a loopback provider is never reached and the answer is unknown', async () => {
    const fake = await fakeProviders();
    fakes.push(fake.close);
    const h = await openStoreHarness(store, { SLUICE_SECRET_SCAN_VALIDATOR_ORIGIN: fake.origin, SLUICE_SECRET_SCAN_VALIDATE: 'true', SLUICE_SECRET_SCAN_VALIDATE_TIMEOUT_MS: '300' });
    const { key } = await newAccount(h);
    const r = await scan(h, key, {});
    expect(r.config.validate).toBe(true);
    expect(r.findings.map((f: { validation: { status: string } }) => f.validation.status)).toEqual(['unknown', 'unknown', 'unknown', 'unknown']);
    expect(fake.seen).toEqual([]);
  });
});
