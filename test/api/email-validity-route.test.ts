import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { TEST_STORES } from '../support/test-engine.js';
import { startMailWorld, type MailWorld } from '../support/mail-world.js';
import type { StoreKind } from '../../src/storage/store.js';

const URL = '/api/lookup/email/validity';
let world: MailWorld;

beforeAll(async () => {
  world = await startMailWorld();
});
afterEach(async () => {
  await closeHarnesses();
  expect(world.dataAttempts()).toBe(0);
});
afterAll(() => world.stop());

const harness = (store: StoreKind, env: Record<string, string> = {}): Promise<ApiHarness> => openStoreHarness(store, { ...world.env, ...env });
const post = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: URL, headers: bearer(key), payload: payload as Record<string, unknown> });

describe.each(TEST_STORES)('POST /api/lookup/email/validity on %s', (store) => {
  it('answers status with validity as its alias and the evidence; 1 credit the first time, 0 for a repeat', async () => {
    const h = await harness(store);
    const { id, key } = await newAccount(h, { credits: 5 });
    const first = await post(h, key, { email: 'Alice@ok.test' });
    expect(first.statusCode, first.body).toBe(200);
    expect(json(first)).toMatchObject({
      email: 'alice@ok.test',
      status: 'valid',
      validity: 'valid',
      reason: 'accepted',
      mx: ['mx.ok.test'],
      smtp: { host: 'mx.ok.test', code: 250 },
      flags: { disposable: false, role_account: false, free_provider: false },
      checked: ['syntax', 'dns', 'flags', 'smtp', 'catch_all'],
      credits: 1,
      cached: false,
    });
    const rcpts = world.rcpts();
    const repeat = await post(h, key, { email: 'alice@OK.test' });
    expect(json(repeat)).toMatchObject({ status: 'valid', credits: 0, cached: true });
    // The repeat came from the result cache: the mail server was not asked again.
    expect(world.rcpts()).toBe(rcpts);
    const missing = json(await post(h, key, { email: 'nobody@ok.test' }));
    expect(missing).toMatchObject({ status: 'invalid', validity: 'invalid', reason: 'mailbox_not_found', smtp: { code: 550, enhanced_code: '5.1.1' }, credits: 1 });
    expect(json(await post(h, key, { email: 'x@nullmx.test' }))).toMatchObject({ status: 'invalid', reason: 'null_mx', credits: 1 });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(2);
  });

  it('an address the deadline could not settle is unknown with retry_after, free and not cached; asked again later it is billed once', async () => {
    const h = await harness(store, { SLUICE_VALIDITY_DEADLINE_MS: '300' });
    const { id, key } = await newAccount(h, { credits: 5 });
    const grey = await post(h, key, { email: `dan-${store}@grey.test` });
    expect(grey.statusCode, grey.body).toBe(200);
    expect(json(grey)).toMatchObject({ status: 'unknown', validity: 'unknown', reason: 'greylisted', credits: 0, cached: false, retry_after: 300, mx: ['mx.grey.test'] });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(5);
    // The greylisting server now knows the triplet: the next ask settles it, and bills it.
    const settled = json(await post(h, key, { email: `dan-${store}@grey.test` }));
    expect(settled).toMatchObject({ status: 'valid', reason: 'accepted', credits: 1, cached: false });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(4);
  });

  it('a server that answers 421 is unknown smtp_unavailable, free', async () => {
    const h = await harness(store, { SLUICE_VALIDITY_DEADLINE_MS: '1500' });
    const { id, key } = await newAccount(h, { credits: 1 });
    expect(json(await post(h, key, { email: 'eve@down.test' }))).toMatchObject({ status: 'unknown', reason: 'smtp_unavailable', credits: 0, retry_after: 120 });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(1);
  });

  it('bad syntax is invalid / invalid_syntax and free; two addresses are 400; no email is 422', async () => {
    const h = await harness(store);
    const { id, key } = await newAccount(h, { credits: 1 });
    expect(json(await post(h, key, { email: 'not an email' }))).toMatchObject({ status: 'invalid', validity: 'invalid', reason: 'invalid_syntax', credits: 0, checked: ['syntax'] });
    const two = await post(h, key, { email: 'a@ok.test, b@ok.test' });
    expect(two.statusCode).toBe(400);
    expect(json(two)).toMatchObject({ code: 'multiple_addresses' });
    expect((await post(h, key, {})).statusCode).toBe(422);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(1);
  });

  it('DNS-only mode (SLUICE_SMTP_PROBE=off) answers unknown probe_disabled without a session', async () => {
    const h = await harness(store, { SLUICE_SMTP_PROBE: 'off' });
    const { key } = await newAccount(h, { credits: 1 });
    const sessions = world.sessions();
    expect(json(await post(h, key, { email: 'bob@ok.test' }))).toMatchObject({ status: 'unknown', reason: 'probe_disabled', checked: ['syntax', 'dns', 'flags'], smtp: null, credits: 1 });
    expect(world.sessions()).toBe(sessions);
  });
});
