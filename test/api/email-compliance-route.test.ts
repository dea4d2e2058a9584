import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { COMPLIANCE_RULES } from '../../src/lookups/compliance/compliance-rules.js';
import { NOT_LEGAL_ADVICE } from '../../src/lookups/compliance/compliance-verdict.js';
import type { StoreKind } from '../../src/storage/store.js';
import { bearer, closeHarnesses, json, newAccount, openStoreHarness, type ApiHarness } from '../support/api-harness.js';
import { startEnrichWorld, type EnrichWorld } from '../support/enrich-world.js';
import { TEST_STORES } from '../support/test-engine.js';

const URL = '/api/lookup/email/compliance';
let world: EnrichWorld;

beforeAll(async () => {
  world = await startEnrichWorld();
});
afterEach(async () => {
  await closeHarnesses();
  expect(world.smtp.reduce((n, s) => n + s.dataAttempts, 0)).toBe(0);
});
afterAll(() => world.stop());

const post = (h: ApiHarness, key: string, payload: unknown) => h.app.inject({ method: 'POST', url: URL, headers: bearer(key), payload: payload as Record<string, unknown> });
const rcpts = () => world.smtp.reduce((n, s) => n + s.rcpts.length, 0);
const law = (id: string) => {
  const { name, jurisdiction, regime, requirements } = COMPLIANCE_RULES.find((r) => r.id === id)!;
  return { id, name, jurisdiction, regime, requirements: [...requirements] };
};
const signals = (over: Record<string, unknown>) => ({ cctld_country: null, registration_country: null, mail_server_country: null, role_account: false, disposable: false, free_provider: false, deliverability: 'valid', ...over });

describe.each(TEST_STORES)('POST /api/lookup/email/compliance on %s', (store: StoreKind) => {
  it('answers the verdict, laws, reasons and signals; 1 credit the first time, a repeat is free and read back without asking the mail server', async () => {
    const h = await openStoreHarness(store, world.env);
    const { id, key } = await newAccount(h, { credits: 10 });
    // trust.test: no ccTLD; RDAP says the registrant is in the US.
    const first = await post(h, key, { email: 'Ann@trust.test' });
    expect(first.statusCode, first.body).toBe(200);
    const expected = {
      email: 'ann@trust.test',
      verdict: 'allowed',
      legal_to_email: true,
      countries: [{ country: 'US', source: 'registration' }],
      laws: [law('can_spam')],
      reasons: ['registration_country_US', 'can_spam_opt_out'],
      signals: signals({ registration_country: 'US' }),
      disclaimer: NOT_LEGAL_ADVICE,
    };
    expect(json(first)).toEqual({ ...expected, credits: 1 });
    const asked = rcpts();
    expect(json(await post(h, key, { email: 'ann@TRUST.test' }))).toEqual({ ...expected, credits: 0 });
    expect(rcpts()).toBe(asked);

    expect(json(await post(h, key, { email: 'kim@shop.de' }))).toEqual({
      email: 'kim@shop.de',
      verdict: 'consent_required',
      legal_to_email: null,
      countries: [{ country: 'DE', source: 'cctld' }],
      laws: [law('gdpr_eprivacy')],
      reasons: ['cctld_country_DE', 'gdpr_eprivacy_requires_consent'],
      signals: signals({ cctld_country: 'DE' }),
      disclaimer: NOT_LEGAL_ADVICE,
      credits: 1,
    });
    // A role address at a company domain in the UK: a corporate subscriber, outside PECR's consent rule.
    expect(json(await post(h, key, { email: 'info@acme.co.uk' }))).toEqual({
      email: 'info@acme.co.uk',
      verdict: 'allowed',
      legal_to_email: true,
      countries: [{ country: 'GB', source: 'cctld' }],
      laws: [law('uk_gdpr_pecr')],
      reasons: ['role_account', 'cctld_country_GB', 'uk_gdpr_pecr_corporate_subscriber', 'uk_gdpr_pecr_opt_out'],
      signals: signals({ cctld_country: 'GB', role_account: true, deliverability: 'risky' }),
      disclaimer: NOT_LEGAL_ADVICE,
      credits: 1,
    });
    // No country signal at all, and the mailbox does not exist.
    expect(json(await post(h, key, { email: 'zed@bare.test' }))).toEqual({
      email: 'zed@bare.test',
      verdict: 'do_not_email',
      legal_to_email: false,
      countries: [],
      laws: [],
      reasons: ['no_jurisdiction_signal', 'undeliverable'],
      signals: signals({ deliverability: 'invalid' }),
      disclaimer: NOT_LEGAL_ADVICE,
      credits: 1,
    });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(6);
  });

  it('while the verifier is still working the verdict is provisional with checking and result_id; asking again settles it, free, and the settled verdict is kept', async () => {
    const h = await openStoreHarness(store, { ...world.env, SLUICE_VALIDITY_DEADLINE_MS: '300' });
    const { id, key } = await newAccount(h, { credits: 2 });
    const email = `nobody-${store}@grey.us`;
    const provisional = json(await post(h, key, { email }));
    expect(provisional).toEqual({
      email,
      verdict: 'allowed',
      legal_to_email: true,
      countries: [{ country: 'US', source: 'cctld' }],
      laws: [law('can_spam')],
      reasons: ['deliverability_pending', 'cctld_country_US', 'can_spam_opt_out'],
      signals: signals({ cctld_country: 'US', deliverability: null }),
      disclaimer: NOT_LEGAL_ADVICE,
      credits: 1,
      checking: true,
      result_id: expect.any(Number),
    });
    expect(provisional.result_id).toBeGreaterThan(0);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(1);
    // The greylisting server now judges the address: it does not exist.
    const settled = json(await post(h, key, { email }));
    const verdict = {
      email,
      verdict: 'do_not_email',
      legal_to_email: false,
      countries: [{ country: 'US', source: 'cctld' }],
      laws: [law('can_spam')],
      reasons: ['cctld_country_US', 'undeliverable'],
      signals: signals({ cctld_country: 'US', deliverability: 'invalid' }),
      disclaimer: NOT_LEGAL_ADVICE,
      credits: 0,
    };
    expect(settled).toEqual(verdict);
    const asked = rcpts();
    expect(json(await post(h, key, { email }))).toEqual(verdict);
    expect(rcpts()).toBe(asked);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(1);
    // The settled verdict is stored on the check the provisional answer named.
    const check = await h.engine.deps.store.complianceChecks.latest(id, (await import('node:crypto')).createHash('sha256').update(email).digest('hex'), 0);
    expect(check).toMatchObject({ id: provisional.result_id, settledAt: expect.any(Number), answer: { verdict: 'do_not_email' } });
  });

  it('two first lookups of one address at once are charged once', async () => {
    const h = await openStoreHarness(store, world.env);
    const { id, key } = await newAccount(h, { credits: 5 });
    const answers = (await Promise.all([post(h, key, { email: 'kim@shop.de' }), post(h, key, { email: 'KIM@shop.de' })])).map(json);
    expect(answers.map((a) => a.verdict)).toEqual(['consent_required', 'consent_required']);
    expect(answers.map((a) => a.credits).sort()).toEqual([0, 1]);
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(4);
  });

  it('refuses bad input free, and a new address on an empty balance with 402', async () => {
    const h = await openStoreHarness(store, world.env);
    const { id, key } = await newAccount(h, { credits: 0 });
    const bad = await post(h, key, { email: 'not an email' });
    expect(bad.statusCode).toBe(400);
    expect(json(bad)).toMatchObject({ code: 'invalid_email' });
    expect((await post(h, key, {})).statusCode).toBe(422);
    const broke = await post(h, key, { email: 'kim@shop.de' });
    expect(broke.statusCode).toBe(402);
    expect(json(broke)).toMatchObject({ code: 'insufficient_credits' });
    expect((await h.engine.deps.billing.requireAccount(id)).credits).toBe(0);
  });
});
