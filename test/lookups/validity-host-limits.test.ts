import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CachingDnsResolver } from '../../src/lookups/dns/caching-dns-resolver.js';
import { parseDnsServers } from '../../src/lookups/dns/dns-resolver.js';
import { UdpDnsResolver } from '../../src/lookups/dns/udp-dns-resolver.js';
import { SlotHolder } from '../../src/lookups/shared-semaphore.js';
import { SharedHostLimiter } from '../../src/lookups/validity/host-limiter.js';
import { CATCH_ALL_KIND, CATCH_ALL_WINDOW_MS, CatchAllCache } from '../../src/lookups/validity/catch-all-cache.js';
import { ADDRESSES_PER_SESSION } from '../../src/lookups/validity/host-sessions.js';
import { HostPacer } from '../../src/lookups/validity/host-pacer.js';
import { ValidityVerifier, type ValidityVerifierOptions } from '../../src/lookups/validity/validity-verifier.js';
import { systemClock } from '../../src/shared/clock.js';
import { blockedReason } from '../../src/webhooks/address-policy.js';
import { DnsFake } from '../support/dns-fake.js';
import { freeLoopbackPort, SmtpFake } from '../support/smtp-fake.js';
import { TEST_STORES } from '../support/test-engine.js';
import { openTestStore, type TestStore } from '../support/test-store.js';

// One mail host behind 12 domains, asked by two verifiers that stand for two worker processes:
// only the store's shared slots can keep them together under the per-host limit.
const dns = new DnsFake();
let server = '';
let port = 0;
const host = new SmtpFake('127.0.0.31', { catchAll: true, replyDelayMs: 40 });
const DOMAINS = Array.from({ length: 12 }, (_, i) => `shop${i}.test`);

beforeAll(async () => {
  server = await dns.start();
  port = await freeLoopbackPort();
  await host.start(port);
  for (const d of DOMAINS) dns.set(d, { mx: [{ preference: 10, exchange: 'mx.shared-host.test' }] });
  dns.set('mx.shared-host.test', { a: ['127.0.0.31'] });
});
afterAll(async () => {
  await host.stop();
  await dns.stop();
});

describe.each(TEST_STORES)('per-MX-host concurrency in the shared limits on %s', (kind) => {
  let opened: TestStore;
  beforeEach(async () => {
    opened = await openTestStore(kind);
    host.peakActive = 0;
  });
  afterEach(() => opened.close());

  function verifier(extra: Partial<ValidityVerifierOptions> = {}): ValidityVerifier {
    const clock = systemClock;
    return new ValidityVerifier({
      resolver: new CachingDnsResolver(new UdpDnsResolver({ servers: parseDnsServers(server), timeoutMs: 500 }), clock),
      clock,
      probe: true,
      port,
      helo: 'verifier.sluice.test',
      mailFrom: 'verify@sluice.test',
      timeoutMs: 5_000,
      allowPrivate: true,
      blockedReason,
      hostLimiter: new SharedHostLimiter(new SlotHolder(opened.store.limits, clock), clock, 2),
      catchAll: new CatchAllCache(clock, CATCH_ALL_WINDOW_MS, undefined, opened.store.results),
      randomLocal: () => 'nobody-at-all',
      ...extra,
    });
  }

  it('new connections to one MX host from three processes start at least the pacing interval apart', async () => {
    const interval = 400;
    const from = host.connectedAt.length;
    // Three verifiers for three processes, each with its own pacer on the one store; each notes
    // the time its pacer booked and when it started to connect.
    const sessions: { booked: number; started: number }[] = [];
    const paced = (): ValidityVerifier => {
      const pacer = new HostPacer(opened.store.limits, systemClock, interval);
      let booked = 0;
      return verifier({ pace: async (h) => (booked = await pacer.wait(h)), onSession: () => sessions.push({ booked, started: Date.now() }) });
    };
    const outcomes = await Promise.all(['shop5', 'shop6', 'shop7'].map((d) => paced().lookup([`x@${d}.test`])));
    expect(outcomes.flat().every((o) => o.ok)).toBe(true);
    expect(host.connectedAt.length - from).toBe(3);
    expect(sessions).toHaveLength(3);
    // Bookings are an interval apart, whichever process made them; no connection starts before its
    // booking (a start may trail it by the store's reply, which load stretches).
    const booked = sessions.map((s) => s.booked).sort((a, b) => a - b);
    for (let i = 1; i < booked.length; i++) expect(booked[i]! - booked[i - 1]!).toBeGreaterThanOrEqual(interval);
    // 1 ms for Date.now()'s rounding against the timer's clock.
    for (const s of sessions) expect(s.started).toBeGreaterThanOrEqual(s.booked - 1);
  });

  it('a domain\'s catch-all probe made by one process is not made again by another on the store', async () => {
    const probes = (): number => host.rcpts.filter((r) => r === 'nobody-at-all@shop0.test').length;
    const before = probes();
    const [first] = await verifier().lookup(['one@shop0.test']);
    expect(first).toMatchObject({ ok: true, result: { reason: 'catch_all', catch_all: true } });
    expect(probes() - before).toBe(1);
    // The first process writes the answer without waiting for it; the second reads the store.
    await expect.poll(async () => (await opened.store.results.getMany(CATCH_ALL_KIND, ['shop0.test'], 0)).size).toBe(1);
    const [second] = await verifier().lookup(['two@shop0.test']);
    expect(second).toMatchObject({ ok: true, result: { reason: 'catch_all', catch_all: true } });
    expect(probes() - before).toBe(1);
  });

  it('two processes together never hold more than SLUICE_SMTP_HOST_CONCURRENCY sessions to one MX host', async () => {
    // Each verifier's list is long enough for it to want both of its own sessions at once
    // (ADDRESSES_PER_SESSION): four sessions wanted, two slots in the store.
    const list = (tag: string): string[] => DOMAINS.flatMap((d) => Array.from({ length: ADDRESSES_PER_SESSION / 5 }, (_, i) => `${tag}${i}@${d}`));
    const outcomes = await Promise.all([verifier().lookup(list('a')), verifier().lookup(list('b'))]);
    expect(outcomes.flat()).toHaveLength(2 * DOMAINS.length * (ADDRESSES_PER_SESSION / 5));
    expect(outcomes.flat().every((o) => o.ok && o.result.reason === 'catch_all')).toBe(true);
    // Without the store's slots each process would hold its two at once: a peak of 4.
    expect(host.peakActive).toBe(2);
  });
});
