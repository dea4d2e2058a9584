import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { CachingDnsResolver } from '../../src/lookups/dns/caching-dns-resolver.js';
import { UdpDnsResolver } from '../../src/lookups/dns/udp-dns-resolver.js';
import { parseDnsServers } from '../../src/lookups/dns/dns-resolver.js';
import { CatchAllCache } from '../../src/lookups/validity/catch-all-cache.js';
import { ValidityVerifier, type ValidityVerifierOptions } from '../../src/lookups/validity/validity-verifier.js';
import type { ValidityResult } from '../../src/lookups/validity/validity-result.js';
import { lookupBatch } from '../../src/jobs/lookup-batch.js';
import { Limiters } from '../../src/lookups/limiters.js';
import { FakeClock } from '../../src/shared/clock.js';
import { blockedReason } from '../../src/webhooks/address-policy.js';
import { DnsFake } from '../support/dns-fake.js';
import { freeLoopbackPort, SmtpFake } from '../support/smtp-fake.js';
import type { LookupOutcome } from '../../src/lookups/lookup-provider.js';

// Every server here is on loopback and started by this file: the verifier is pointed at them by
// SLUICE_DNS_SERVERS-style settings, never at the system resolver or a real mail host.
const dns = new DnsFake();
let dnsServer = '';
let port = 0;
const fakes: SmtpFake[] = [];

async function mailHost(address: string, behaviour: ConstructorParameters<typeof SmtpFake>[1]): Promise<SmtpFake> {
  const fake = new SmtpFake(address, behaviour);
  await fake.start(port);
  fakes.push(fake);
  return fake;
}

function zone(domain: string, mx: string, ip: string): void {
  dns.set(domain, { mx: [{ preference: 10, exchange: mx }] }).set(mx, { a: [ip] });
}

let plain: SmtpFake, ok: SmtpFake, catchAll: SmtpFake, greylist: SmtpFake, slow: SmtpFake, dropper: SmtpFake, tls: SmtpFake, busy: SmtpFake, picky: SmtpFake, secondary: SmtpFake, yahoo: SmtpFake;

beforeAll(async () => {
  dnsServer = await dns.start();
  port = await freeLoopbackPort();
  ok = await mailHost('127.0.0.2', {
    users: ['alice', 'info', 'a1', 'a2', 'a3', 'a4', 'a5'],
    replies: { 'full@ok.test': [552, '5.2.2 Mailbox full'], 'gone@ok.test': [550, '5.2.1 Mailbox disabled'], 'blocked@ok.test': [550, '5.7.1 Client host rejected by policy'] },
  });
  catchAll = await mailHost('127.0.0.3', { catchAll: true });
  greylist = await mailHost('127.0.0.4', { users: ['carol'], greylist: true });
  slow = await mailHost('127.0.0.5', { users: ['dave'], bannerDelayMs: 1_500 });
  dropper = await mailHost('127.0.0.6', { users: ['erin'] , dropAfterEhlo: true });
  tls = await mailHost('127.0.0.7', { users: ['frank'], starttls: true });
  busy = await mailHost('127.0.0.8', { users: ['gina'], busy: true });
  picky = await mailHost('127.0.0.9', { users: ['p1', 'p2', 'p3'], maxRecipients: 1 });
  secondary = await mailHost('127.0.0.11', { users: ['henry'] });
  yahoo = await mailHost('127.0.0.12', { catchAll: true });
  plain = await mailHost('127.0.0.13', { users: ['a1', 'a2', 'a3'], pipelining: false });
  zone('plain.test', 'mx.plain.test', '127.0.0.13');
  zone('ok.test', 'mx.ok.test', '127.0.0.2');
  dns.set('ok2.test', { mx: [{ preference: 10, exchange: 'mx.ok.test' }] });
  zone('catchall.test', 'mx.catchall.test', '127.0.0.3');
  zone('grey.test', 'mx.grey.test', '127.0.0.4');
  zone('slow.test', 'mx.slow.test', '127.0.0.5');
  zone('drop.test', 'mx.drop.test', '127.0.0.6');
  zone('tls.test', 'mx.tls.test', '127.0.0.7');
  zone('busy.test', 'mx.busy.test', '127.0.0.8');
  zone('picky.test', 'mx.picky.test', '127.0.0.9');
  zone('yahoo.test', 'mta5.am0.yahoodns.net', '127.0.0.12');
  // The primary MX's address has nothing listening: connections are refused.
  dns.set('twomx.test', { mx: [{ preference: 20, exchange: 'mx2.twomx.test' }, { preference: 10, exchange: 'mx1.twomx.test' }] });
  dns.set('mx1.twomx.test', { a: ['127.0.0.10'] }).set('mx2.twomx.test', { a: ['127.0.0.11'] });
  dns.set('nullmx.test', { mx: [{ preference: 0, exchange: '.' }] });
  dns.set('nomail.test', {});
  dns.set('implicit.test', { a: ['127.0.0.2'] });
  dns.set('servfail.test', { rcode: 'SERVFAIL' });
  dns.set('silent.test', { silent: true });
  dns.set('mailinator.com', { mx: [{ preference: 10, exchange: 'mx.ok.test' }] });
  dns.set('private.test', { mx: [{ preference: 10, exchange: 'mx.private.test' }] }).set('mx.private.test', { a: ['127.0.0.2'] });
});

afterEach(() => {
  // The one rule that is never bent: a verifier must not send a message.
  for (const fake of fakes) expect(fake.dataAttempts).toBe(0);
});

afterAll(async () => {
  await Promise.all(fakes.map((f) => f.stop()));
  await dns.stop();
});

function verifier(options: Partial<ValidityVerifierOptions> = {}): ValidityVerifier {
  const clock = options.clock ?? new FakeClock();
  return new ValidityVerifier({
    resolver: new CachingDnsResolver(new UdpDnsResolver({ servers: parseDnsServers(dnsServer), timeoutMs: 200, tries: 1 }), clock),
    clock,
    probe: true,
    port,
    helo: 'verifier.sluice.test',
    mailFrom: 'verify@sluice.test',
    timeoutMs: 800,
    allowPrivate: true,
    blockedReason,
    ...options,
  });
}

async function one(v: ValidityVerifier, email: string): Promise<LookupOutcome<ValidityResult>> {
  return (await v.lookup([email]))[0]!;
}

async function answer(v: ValidityVerifier, email: string): Promise<ValidityResult> {
  const outcome = await one(v, email);
  if (!outcome.ok) throw new Error(`expected an answer for ${email}, got ${outcome.code}: ${outcome.message}`);
  return outcome.result;
}

describe('email verification against loopback DNS and SMTP servers', () => {
  it('an existing mailbox is valid, with the RCPT reply and the steps that ran as evidence', async () => {
    const r = await answer(verifier(), 'Alice@OK.test');
    expect(r).toMatchObject({ email: 'alice@ok.test', status: 'valid', reason: 'accepted', mx: ['mx.ok.test'], catch_all: false });
    expect(r.smtp).toMatchObject({ host: 'mx.ok.test', code: 250, tls: null });
    expect(r.checked).toEqual(['syntax', 'dns', 'flags', 'smtp', 'catch_all']);
  });

  it('550 5.1.1 is mailbox_not_found; 552 5.2.2 full; 5.2.1 disabled; 5.7.x a policy block, not proof of absence', async () => {
    const v = verifier();
    const [missing, full, gone, blocked] = (await v.lookup(['bob@ok.test', 'full@ok.test', 'gone@ok.test', 'blocked@ok.test'])).map((o) => (o.ok ? o.result : undefined));
    expect(missing).toMatchObject({ status: 'invalid', reason: 'mailbox_not_found', smtp: { code: 550, enhanced_code: '5.1.1' } });
    expect(full).toMatchObject({ status: 'risky', reason: 'mailbox_full', smtp: { code: 552, enhanced_code: '5.2.2' } });
    expect(gone).toMatchObject({ status: 'invalid', reason: 'mailbox_disabled' });
    expect(blocked).toMatchObject({ status: 'unknown', reason: 'policy_block', smtp: { enhanced_code: '5.7.1' } });
  });

  it('several addresses of one domain share one SMTP session', async () => {
    const before = ok.sessions;
    const outcomes = await verifier().lookup(['a1@ok.test', 'a2@ok.test', 'a3@ok.test', 'a4@ok.test', 'a5@ok.test', 'nobody@ok.test']);
    expect(outcomes.map((o) => o.ok && o.result.status)).toEqual(['valid', 'valid', 'valid', 'valid', 'valid', 'invalid']);
    expect(ok.sessions - before).toBe(1);
  });

  it('domains served by one MX host share one session, each with its own catch-all probe', async () => {
    const before = ok.sessions;
    const outcomes = await verifier().lookup(['a1@ok.test', 'a1@ok2.test', 'nobody2@ok2.test']);
    expect(outcomes.map((o) => o.ok && [o.result.reason, o.result.catch_all])).toEqual([
      ['accepted', false],
      ['accepted', false],
      ['mailbox_not_found', false],
    ]);
    expect(ok.sessions - before).toBe(1);
  });

  it('a server that offers PIPELINING is sent a round of recipients at once; one that does not, one at a time', async () => {
    const piped = await verifier().lookup(['a1@ok.test', 'a2@ok.test', 'a3@ok.test', 'nobody@ok.test']);
    expect(piped.map((o) => o.ok && o.result.reason)).toEqual(['accepted', 'accepted', 'accepted', 'mailbox_not_found']);
    expect(ok.mostRcptsInOneRead).toBeGreaterThan(1);
    const stepwise = await verifier().lookup(['a1@plain.test', 'a2@plain.test', 'a3@plain.test', 'nobody@plain.test']);
    expect(stepwise.map((o) => o.ok && o.result.reason)).toEqual(['accepted', 'accepted', 'accepted', 'mailbox_not_found']);
    expect(plain.mostRcptsInOneRead).toBe(1);
  });

  it('a long list is asked in transactions of 100 recipients (RSET, MAIL FROM) on one connection', async () => {
    const [sessions, mailFroms] = [catchAll.sessions, catchAll.mailFroms];
    const list = Array.from({ length: 249 }, (_, i) => `someone${i}@catchall.test`);
    // One session to the host at a time, so that one connection takes them all.
    const outcomes = await verifier({ hostConcurrency: 1 }).lookup(list);
    expect(outcomes.every((o) => o.ok && o.result.reason === 'catch_all')).toBe(true);
    // 250 recipients with the domain's catch-all probe: three transactions, one connection.
    expect(catchAll.sessions - sessions).toBe(1);
    expect(catchAll.mailFroms - mailFroms).toBe(3);
  });

  it('two batches that need one domain\'s catch-all answer at once ask it once, and both wait for it', async () => {
    const v = verifier({ randomLocal: () => 'nobody-here-twice' });
    const probes = (): number => catchAll.rcpts.filter((r) => r === 'nobody-here-twice@catchall.test').length;
    const before = probes();
    const [first, second] = await Promise.all([v.lookup(['one@catchall.test']), v.lookup(['two@catchall.test'])]);
    expect([...first!, ...second!].map((o) => o.ok && [o.result.reason, o.result.catch_all])).toEqual([
      ['catch_all', true],
      ['catch_all', true],
    ]);
    expect(probes() - before).toBe(1);
  });

  it('batches asked at once share the host\'s session: the second batch joins the first one\'s queue', async () => {
    const v = verifier();
    const before = ok.sessions;
    const [first, second] = await Promise.all([v.lookup(['a1@ok.test', 'a2@ok.test']), v.lookup(['a3@ok.test', 'a4@ok.test', 'nobody@ok.test'])]);
    expect([...first!, ...second!].map((o) => o.ok && o.result.reason)).toEqual(['accepted', 'accepted', 'accepted', 'accepted', 'mailbox_not_found']);
    expect(ok.sessions - before).toBe(1);
  });

  it('a host limiter that cannot be reached fails the lookup call (to be retried), not the addresses', async () => {
    let down = true;
    const hostLimiter = {
      run: <T>(_host: string, call: () => Promise<T>): Promise<T> => {
        if (!down) return call();
        down = false;
        return Promise.reject(new Error('the store\'s slots are unreachable'));
      },
    };
    const v = verifier({ hostLimiter });
    await expect(v.lookup(['a1@ok.test', 'a2@ok.test'])).rejects.toThrow('the store\'s slots are unreachable');
    // The retry, with the limiter back, finds the host's queue working again.
    const again = await v.lookup(['a1@ok.test']);
    expect(again[0]).toMatchObject({ ok: true, result: { reason: 'accepted' } });
  });

  it('a server that answers 452 4.5.3 after one recipient gets a new session for the rest', async () => {
    const before = picky.sessions;
    const outcomes = await verifier().lookup(['p1@picky.test', 'p2@picky.test', 'p3@picky.test', 'p4@picky.test']);
    expect(outcomes.map((o) => o.ok && o.result.reason)).toEqual(['accepted', 'accepted', 'accepted', 'mailbox_not_found']);
    expect(picky.sessions - before).toBeGreaterThanOrEqual(4);
  });

  it('a catch-all domain is risky, and is probed once per domain in the window', async () => {
    const clock = new FakeClock();
    const v = verifier({ clock, catchAll: new CatchAllCache(clock), randomLocal: () => 'zz-random-probe' });
    const first = await answer(v, 'anyone@catchall.test');
    const second = await answer(v, 'someone@catchall.test');
    expect(first).toMatchObject({ status: 'risky', reason: 'catch_all', catch_all: true });
    expect(second).toMatchObject({ status: 'risky', reason: 'catch_all', catch_all: true });
    expect(catchAll.rcpts.filter((r) => r.startsWith('zz-random-probe')).length).toBe(1);
  });

  it('when the primary MX refuses connections, the secondary answers', async () => {
    const r = await answer(verifier(), 'henry@twomx.test');
    expect(r).toMatchObject({ status: 'valid', mx: ['mx1.twomx.test', 'mx2.twomx.test'], smtp: { host: 'mx2.twomx.test', code: 250 } });
    expect(secondary.sessions).toBeGreaterThan(0);
  });

  it('STARTTLS is used when offered, and a self-signed certificate is recorded, not trusted', async () => {
    const r = await answer(verifier(), 'frank@tls.test');
    expect(r.status).toBe('valid');
    expect(r.smtp?.tls).toMatchObject({ authorized: false });
    expect(r.smtp?.tls?.version).toMatch(/^TLS/);
    expect(r.smtp?.tls?.issuer).toEqual(expect.any(String));
    expect(r.smtp?.tls?.valid_to).toMatch(/^\d{4}-/);
    expect(tls.sessions).toBeGreaterThan(0);
  });

  it('greylisting (451 4.7.1) is a transient, free failure that resolves when tried again later', async () => {
    const v = verifier({ randomLocal: () => 'grey-probe' });
    const first = await one(v, 'carol@grey.test');
    expect(first).toMatchObject({ ok: false, retryable: false, code: 'greylisted' });
    expect(await answer(v, 'carol@grey.test')).toMatchObject({ status: 'valid', reason: 'accepted' });
  });

  it('lookupBatch does not retry a greylisted address at once (a greylister wants minutes): the row is left to a deferred pass', async () => {
    const v = verifier();
    const limiters = new Limiters({ accountConcurrency: 4, providerConcurrency: 4 });
    const before = greylist.rcpts.filter((r) => r === 'carol2@grey.test').length;
    const outcome = (await lookupBatch(['carol2@grey.test'], { accountId: 'a', provider: v, limiters, backoffMs: 10 })).get('carol2@grey.test')!;
    expect(outcome).toMatchObject({ ok: false, code: 'greylisted' });
    expect(greylist.rcpts.filter((r) => r === 'carol2@grey.test').length - before).toBe(1);
  });

  it('a banner slower than the time-out is a transient timeout', async () => {
    const outcome = await one(verifier({ timeoutMs: 300 }), 'dave@slow.test');
    expect(outcome).toMatchObject({ ok: false, retryable: false, code: 'timeout' });
    expect(slow.sessions).toBeGreaterThan(0);
  });

  it('a server that drops the connection after EHLO, and one that answers 421, are smtp_unavailable (transient)', async () => {
    const v = verifier();
    expect(await one(v, 'erin@drop.test')).toMatchObject({ ok: false, retryable: false, code: 'smtp_unavailable' });
    expect(await one(v, 'gina@busy.test')).toMatchObject({ ok: false, retryable: false, code: 'smtp_unavailable' });
    expect(dropper.sessions).toBeGreaterThan(0);
    expect(busy.sessions).toBeGreaterThan(0);
  });

  it('a null MX, a missing domain and a domain without mail hosts are invalid without any SMTP', async () => {
    const v = verifier();
    const sessions = fakes.reduce((n, f) => n + f.sessions, 0);
    expect(await answer(v, 'x@nullmx.test')).toMatchObject({ status: 'invalid', reason: 'null_mx', checked: ['syntax', 'dns'] });
    expect(await answer(v, 'x@nowhere.test')).toMatchObject({ status: 'invalid', reason: 'invalid_domain' });
    expect(await answer(v, 'x@nomail.test')).toMatchObject({ status: 'invalid', reason: 'no_mx' });
    expect(fakes.reduce((n, f) => n + f.sessions, 0)).toBe(sessions);
  });

  it('without MX records the domain itself is the mail host (RFC 5321 §5.1)', async () => {
    expect(await answer(verifier(), 'alice@implicit.test')).toMatchObject({ status: 'valid', mx: ['implicit.test'] });
  });

  it('SERVFAIL and a silent DNS server are transient, never invalid', async () => {
    const v = verifier();
    expect(await one(v, 'x@servfail.test')).toMatchObject({ ok: false, retryable: false, code: 'dns_unavailable' });
    expect(await one(v, 'x@silent.test')).toMatchObject({ ok: false, retryable: false, code: 'dns_unavailable' });
  });

  it('bad syntax is invalid_syntax with only the syntax step', async () => {
    expect(await answer(verifier(), 'not an address')).toMatchObject({ status: 'invalid', reason: 'invalid_syntax', checked: ['syntax'] });
  });

  it('a disposable domain is risky and not probed; a role account that is accepted is risky', async () => {
    const v = verifier();
    const before = ok.rcpts.length;
    expect(await answer(v, 'someone@mailinator.com')).toMatchObject({ status: 'risky', reason: 'disposable', flags: { disposable: true } });
    expect(ok.rcpts.length).toBe(before);
    expect(await answer(v, 'info@ok.test')).toMatchObject({ status: 'risky', reason: 'role_account', flags: { role_account: true } });
  });

  it('a provider known to accept every recipient (rules file) is risky provider_accepts_all, never valid', async () => {
    const r = await answer(verifier(), 'anybody@yahoo.test');
    expect(r).toMatchObject({ status: 'risky', reason: 'provider_accepts_all', smtp: { host: 'mta5.am0.yahoodns.net', code: 250 } });
    expect(yahoo.sessions).toBeGreaterThan(0);
  });

  it('an MX on a loopback or private address is never connected to without SLUICE_SMTP_ALLOW_PRIVATE', async () => {
    const before = ok.sessions;
    const r = await answer(verifier({ allowPrivate: false }), 'alice@private.test');
    expect(r).toMatchObject({ status: 'unknown', reason: 'blocked_address' });
    expect(ok.sessions).toBe(before);
  });

  it('DNS-only mode says what it did not check: unknown, probe_disabled, no SMTP step', async () => {
    const before = ok.sessions;
    const r = await answer(verifier({ probe: false }), 'alice@ok.test');
    expect(r).toMatchObject({ status: 'unknown', reason: 'probe_disabled', mx: ['mx.ok.test'], smtp: null, checked: ['syntax', 'dns', 'flags'] });
    expect(ok.sessions).toBe(before);
  });

  it('DNS answers are cached for their TTL and shared by concurrent queries; failures are not cached', async () => {
    const v = verifier({ probe: false });
    await answer(v, 'a@ok.test');
    const asked = dns.queries;
    await Promise.all([answer(v, 'b@ok.test'), answer(v, 'c@ok.test')]);
    expect(dns.queries).toBe(asked);
    await one(v, 'x@servfail.test');
    const afterFail = dns.queries;
    await one(v, 'x@servfail.test');
    expect(dns.queries).toBeGreaterThan(afterFail);
  });
});
