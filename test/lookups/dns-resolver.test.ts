import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CachingDnsResolver } from '../../src/lookups/dns/caching-dns-resolver.js';
import { parseDnsServers } from '../../src/lookups/dns/dns-resolver.js';
import { UdpDnsResolver } from '../../src/lookups/dns/udp-dns-resolver.js';
import { FakeClock } from '../../src/shared/clock.js';
import { DnsFake } from '../support/dns-fake.js';

// A DNS server on loopback that this file starts: the resolver under test never sees the system's.
const dns = new DnsFake();
let server = '';

beforeAll(async () => {
  dns.set('mail.test', { mx: [{ preference: 5, exchange: 'mx.mail.test' }], a: ['192.0.2.1'], ttl: 60 });
  dns.set('broken.test', { rcode: 'SERVFAIL' });
  dns.set('quiet.test', { silent: true });
  server = await dns.start();
});
afterAll(() => dns.stop());

describe('the shared DNS layer', () => {
  it('tells an answer, a missing name, a failing server and silence apart', async () => {
    const resolver = new UdpDnsResolver({ servers: parseDnsServers(server), timeoutMs: 150, tries: 1 });
    expect(await resolver.query('mail.test', 'MX')).toEqual({ rcode: 'NOERROR', records: [{ type: 'MX', preference: 5, exchange: 'mx.mail.test', ttl: 60 }], ttl: 60 });
    expect(await resolver.query('mail.test', 'A')).toMatchObject({ rcode: 'NOERROR', records: [{ type: 'A', value: '192.0.2.1' }] });
    expect(await resolver.query('gone.test', 'MX')).toMatchObject({ rcode: 'NXDOMAIN', records: [] });
    expect(await resolver.query('broken.test', 'MX')).toMatchObject({ rcode: 'SERVFAIL', records: [], ttl: 0 });
    expect(await resolver.query('quiet.test', 'MX')).toMatchObject({ rcode: 'TIMEOUT', records: [] });
  });

  it('asks the next server when the first does not answer', async () => {
    const resolver = new UdpDnsResolver({ servers: parseDnsServers(`127.0.0.1:9,${server}`), timeoutMs: 150, tries: 1 });
    expect(await resolver.query('mail.test', 'MX')).toMatchObject({ rcode: 'NOERROR' });
  });

  it('keeps answers for their TTL and no longer', async () => {
    const clock = new FakeClock();
    const resolver = new CachingDnsResolver(new UdpDnsResolver({ servers: parseDnsServers(server), timeoutMs: 150, tries: 1 }), clock);
    await resolver.query('mail.test', 'MX');
    const asked = dns.queries;
    await resolver.query('MAIL.test', 'MX');
    expect(dns.queries).toBe(asked);
    clock.advance(61_000);
    await resolver.query('mail.test', 'MX');
    expect(dns.queries).toBe(asked + 1);
  });

  it('keeps at most maxInFlight questions out at once; the rest wait their turn', async () => {
    const slow = new DnsFake(30);
    for (let i = 0; i < 20; i++) slow.set(`d${i}.test`, { mx: [{ preference: 10, exchange: 'mx.test' }] });
    const resolver = new UdpDnsResolver({ servers: parseDnsServers(await slow.start()), maxInFlight: 4 });
    try {
      const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => resolver.query(`d${i}.test`, 'MX')));
      expect(answers.every((a) => a.rcode === 'NOERROR' && a.records.length === 1)).toBe(true);
      expect(slow.peakPending).toBe(4);
    } finally {
      await slow.stop();
    }
  });

  it('reads server lists as host:port, [v6]:port and bare hosts', () => {
    expect(parseDnsServers('127.0.0.1:5353, [::1]:53,10.0.0.1')).toEqual([
      { host: '127.0.0.1', port: 5353 },
      { host: '::1', port: 53 },
      { host: '10.0.0.1', port: 53 },
    ]);
  });
});
