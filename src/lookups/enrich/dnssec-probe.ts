import dgram from 'node:dgram';
import { getServers } from 'node:dns';
import { isIPv6 } from 'node:net';
import { randomInt } from 'node:crypto';
import dnsPacket from 'dns-packet';

/** The AD (authenticated data) bit of a DNS header, RFC 4035 3.2.3. */
const AUTHENTIC_DATA = 1 << 5;

export type DnssecStatus = 'secure' | 'insecure' | 'unknown';

/**
 * Whether the resolver validated the domain's answer: a SOA query with the DO bit set (RFC 3225),
 * reading AD in the reply. Node's resolver hides the header, so this asks the same servers as the
 * shared DNS layer (SLUICE_DNS_SERVERS, or the system's) itself. Only as good as the resolver:
 * a validating one (Unbound, BIND, 1.1.1.1) sets AD; a non-validating one never does.
 */
export async function probeDnssec(name: string, servers: readonly { host: string; port: number }[] | undefined, timeoutMs = 2_000): Promise<DnssecStatus> {
  const list = servers ?? getServers().map((s) => ({ host: s.replace(/^\[|\](:\d+)?$/g, ''), port: 53 }));
  for (const server of list) {
    const flags = await ask(server, name, timeoutMs);
    if (flags !== undefined) return (flags.flags & AUTHENTIC_DATA) !== 0 ? 'secure' : flags.rcode === 'NOERROR' ? 'insecure' : 'unknown';
  }
  return 'unknown';
}

function ask(server: { host: string; port: number }, name: string, timeoutMs: number): Promise<{ flags: number; rcode: string } | undefined> {
  return new Promise((resolve) => {
    const id = randomInt(0, 65_536);
    const socket = dgram.createSocket(isIPv6(server.host) ? 'udp6' : 'udp4');
    const finish = (value: { flags: number; rcode: string } | undefined): void => {
      clearTimeout(timer);
      socket.close();
      resolve(value);
    };
    const timer = setTimeout(() => finish(undefined), timeoutMs);
    socket.on('error', () => finish(undefined));
    socket.on('message', (message) => {
      try {
        const packet = dnsPacket.decode(message) as dnsPacket.DecodedPacket & { rcode?: string; flags?: number };
        if (packet.id !== id) return;
        finish({ flags: packet.flags ?? 0, rcode: packet.rcode ?? 'OTHER' });
      } catch {
        // not an answer; wait for one or time out
      }
    });
    const query = dnsPacket.encode({
      type: 'query',
      id,
      flags: dnsPacket.RECURSION_DESIRED | AUTHENTIC_DATA,
      questions: [{ type: 'SOA', name }],
      additionals: [{ type: 'OPT', name: '.', udpPayloadSize: 1232, flags: dnsPacket.DNSSEC_OK } as dnsPacket.Answer],
    });
    socket.send(query, server.port, server.host, (error) => {
      if (error) finish(undefined);
    });
  });
}

/** The probe bound to the configured servers, as the enricher takes it. */
export function dnssecProbeFor(servers: readonly { host: string; port: number }[] | undefined, timeoutMs: number): (domain: string) => Promise<DnssecStatus> {
  return (domain) => probeDnssec(domain, servers, timeoutMs);
}
