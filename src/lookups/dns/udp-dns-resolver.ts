import dgram from 'node:dgram';
import { isIPv6 } from 'node:net';
import { randomInt } from 'node:crypto';
import dnsPacket from 'dns-packet';
import pLimit, { type LimitFunction } from 'p-limit';
import { DNS_RCODES, type DnsAnswer, type DnsRcode, type DnsRecord, type DnsRecordType, type DnsResolver } from './dns-resolver.js';

export interface UdpDnsResolverOptions {
  servers: readonly { host: string; port: number }[];
  /** Time each server gets per try before the next one is asked. */
  timeoutMs?: number;
  /** Rounds over the server list before the answer is TIMEOUT. */
  tries?: number;
  /** Questions out at once; the rest wait their turn. */
  maxInFlight?: number;
}

/**
 * Questions out at once by default: a thousand at once (a batch's new domains) overflowed the
 * loopback resolver's receive buffer in the validity bench, and each lost one cost its 2 s time-out;
 * 128 at a time took the same thousand in tens of milliseconds. A real resolver drops the same way,
 * and rate-limits a client that floods it.
 */
const MAX_IN_FLIGHT = 128;

/** Negative answers (NXDOMAIN, NOERROR without records) are kept this long when no SOA says. */
const NEGATIVE_TTL_S = 300;

/**
 * Asks the configured servers over UDP with dns-packet, the next server when one does not answer
 * or answers SERVFAIL. One socket per query: a query id collision between concurrent queries on a
 * shared socket would hand one name's answer to another.
 */
export class UdpDnsResolver implements DnsResolver {
  private readonly timeoutMs: number;
  private readonly tries: number;
  private readonly limit: LimitFunction;

  constructor(private readonly options: UdpDnsResolverOptions) {
    if (options.servers.length === 0) throw new Error('UdpDnsResolver needs at least one server');
    this.timeoutMs = options.timeoutMs ?? 2_000;
    this.tries = options.tries ?? 2;
    this.limit = pLimit(options.maxInFlight ?? MAX_IN_FLIGHT);
  }

  async query(name: string, type: DnsRecordType, signal?: AbortSignal): Promise<DnsAnswer> {
    let last: DnsAnswer = { rcode: DNS_RCODES.timeout, records: [], ttl: 0 };
    for (let round = 0; round < this.tries; round++) {
      for (const server of this.options.servers) {
        if (signal?.aborted) return last;
        const answer = await this.limit(() => this.ask(server, name, type, signal));
        if (answer.rcode === DNS_RCODES.noError || answer.rcode === DNS_RCODES.nxDomain) return answer;
        // A SERVFAIL beats a time-out as the answer given: it says a server was reached.
        if (last.rcode === DNS_RCODES.timeout) last = answer;
      }
    }
    return last;
  }

  private ask(server: { host: string; port: number }, name: string, type: DnsRecordType, signal?: AbortSignal): Promise<DnsAnswer> {
    return new Promise((resolve) => {
      const id = randomInt(0, 65_536);
      const socket = dgram.createSocket(isIPv6(server.host) ? 'udp6' : 'udp4');
      let done = false;
      const finish = (answer: DnsAnswer): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        socket.close();
        resolve(answer);
      };
      const onAbort = (): void => finish({ rcode: DNS_RCODES.timeout, records: [], ttl: 0 });
      const timer = setTimeout(onAbort, this.timeoutMs);
      signal?.addEventListener('abort', onAbort, { once: true });
      socket.on('error', () => finish({ rcode: DNS_RCODES.timeout, records: [], ttl: 0 }));
      socket.on('message', (message) => {
        let packet: dnsPacket.DecodedPacket & { rcode?: string };
        try {
          packet = dnsPacket.decode(message) as dnsPacket.DecodedPacket & { rcode?: string };
        } catch {
          return; // garbage is not an answer; wait for the real one or time out
        }
        // An answer to another query (or a spoofed one) is ignored, not believed.
        if (packet.id !== id || packet.questions?.[0]?.name.toLowerCase() !== name.toLowerCase()) return;
        finish(toAnswer(packet, type));
      });
      const query = dnsPacket.encode({ type: 'query', id, flags: dnsPacket.RECURSION_DESIRED, questions: [{ type, name }] });
      socket.send(query, server.port, server.host, (error) => {
        if (error) finish({ rcode: DNS_RCODES.timeout, records: [], ttl: 0 });
      });
    });
  }
}

function toAnswer(packet: dnsPacket.DecodedPacket & { rcode?: string }, type: DnsRecordType): DnsAnswer {
  const rcode = knownRcode(packet.rcode);
  const records: DnsRecord[] = [];
  for (const answer of packet.answers ?? []) {
    if (answer.type !== type) continue;
    const ttl = answer.ttl ?? 0;
    if (answer.type === 'MX') records.push({ type: 'MX', preference: answer.data.preference ?? 0, exchange: answer.data.exchange, ttl });
    else if (answer.type === 'TXT') {
      const data = answer.data;
      const parts = Array.isArray(data) ? data : [data];
      records.push({ type: 'TXT', value: parts.map((p) => (typeof p === 'string' ? p : p.toString('utf8'))).join(''), ttl });
    } else if (answer.type === 'A' || answer.type === 'AAAA' || answer.type === 'NS' || answer.type === 'CNAME') {
      records.push({ type: answer.type, value: answer.data, ttl });
    } else if (answer.type === 'CAA') {
      records.push({ type: 'CAA', flags: answer.data.flags ?? 0, tag: answer.data.tag, value: answer.data.value, ttl });
    } else if (answer.type === 'SOA') {
      const d = answer.data;
      records.push({ type: 'SOA', mname: d.mname, rname: d.rname, serial: d.serial ?? 0, refresh: d.refresh ?? 0, retry: d.retry ?? 0, expire: d.expire ?? 0, minimum: d.minimum ?? 0, ttl });
    }
  }
  const soa = packet.authorities?.find((a) => a.type === 'SOA');
  const negative = soa && soa.type === 'SOA' ? Math.min(soa.ttl ?? NEGATIVE_TTL_S, soa.data.minimum ?? NEGATIVE_TTL_S) : NEGATIVE_TTL_S;
  const ttl = records.length > 0 ? Math.min(...records.map((r) => r.ttl)) : rcode === DNS_RCODES.noError || rcode === DNS_RCODES.nxDomain ? negative : 0;
  return { rcode, records, ttl };
}

function knownRcode(rcode: string | undefined): DnsRcode {
  switch (rcode) {
    case 'NOERROR':
      return DNS_RCODES.noError;
    case 'NXDOMAIN':
      return DNS_RCODES.nxDomain;
    case 'SERVFAIL':
      return DNS_RCODES.servFail;
    case 'REFUSED':
      return DNS_RCODES.refused;
    default:
      return DNS_RCODES.other;
  }
}
