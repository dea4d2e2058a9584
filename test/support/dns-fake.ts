import dgram from 'node:dgram';
import type { AddressInfo } from 'node:net';
import dnsPacket from 'dns-packet';

/** What the fake says about one name. Names not listed answer NXDOMAIN. */
export interface FakeZone {
  mx?: { preference: number; exchange: string }[];
  a?: string[];
  aaaa?: string[];
  /** TXT strings (SPF, DMARC, MTA-STS, TLS-RPT, BIMI, DKIM records). */
  txt?: string[];
  ns?: string[];
  caa?: { flags?: number; tag: 'issue' | 'issuewild' | 'iodef'; value: string }[];
  soa?: { mname: string; rname: string; serial: number };
  /** A validating resolver's answer: AD set when the query asked with the DO bit (RFC 3225). */
  ad?: boolean;
  /** Answer this code for every type instead of records. */
  rcode?: 'SERVFAIL' | 'REFUSED' | 'NXDOMAIN';
  /** Never answer (a time-out for the client). */
  silent?: boolean;
  ttl?: number;
}

const RCODE_NUMBERS = { NOERROR: 0, SERVFAIL: 2, NXDOMAIN: 3, REFUSED: 5 } as const;

/**
 * A DNS server on loopback, started by a test on port 0, that answers from a table the test
 * controls, with a stated latency: a real server for the real UDP client under test, never the
 * system resolver. `queries` counts questions so a test can see the cache at work.
 */
export class DnsFake {
  readonly zones = new Map<string, FakeZone>();
  queries = 0;
  /** Questions received and not yet answered, and the most at once. */
  pending = 0;
  peakPending = 0;
  private socket: dgram.Socket | undefined;

  constructor(private readonly latencyMs = 0) {}

  set(name: string, zone: FakeZone): this {
    this.zones.set(name.toLowerCase(), zone);
    return this;
  }

  async start(): Promise<string> {
    const socket = dgram.createSocket('udp4');
    this.socket = socket;
    socket.on('message', (message, peer) => {
      this.queries++;
      let query: dnsPacket.DecodedPacket;
      try {
        query = dnsPacket.decode(message);
      } catch {
        return;
      }
      const question = query.questions?.[0];
      if (!question) return;
      const zone = this.zones.get(question.name.toLowerCase());
      if (zone?.silent) return;
      this.peakPending = Math.max(this.peakPending, ++this.pending);
      const reply = (): void => {
        this.pending--;
        const response = this.answer(query.id ?? 0, question, zone, doBit(query));
        socket.send(response, peer.port, peer.address);
      };
      if (this.latencyMs > 0) setTimeout(reply, this.latencyMs);
      else reply();
    });
    await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(socket.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.socket ? this.socket.close(() => resolve()) : resolve()));
  }

  private answer(id: number, question: dnsPacket.Question, zone: FakeZone | undefined, dnssecOk = false): Buffer {
    const rcode = zone === undefined ? 'NXDOMAIN' : (zone.rcode ?? 'NOERROR');
    const ttl = zone?.ttl ?? 300;
    const answers: dnsPacket.Answer[] = [];
    if (rcode === 'NOERROR' && zone) {
      const name = question.name;
      if (question.type === 'MX') for (const mx of zone.mx ?? []) answers.push({ type: 'MX', name, ttl, data: { preference: mx.preference, exchange: mx.exchange } });
      if (question.type === 'A') for (const a of zone.a ?? []) answers.push({ type: 'A', name, ttl, data: a });
      if (question.type === 'AAAA') for (const a of zone.aaaa ?? []) answers.push({ type: 'AAAA', name, ttl, data: a });
      if (question.type === 'TXT') for (const t of zone.txt ?? []) answers.push({ type: 'TXT', name, ttl, data: chunks(t) });
      if (question.type === 'NS') for (const n of zone.ns ?? []) answers.push({ type: 'NS', name, ttl, data: n });
      if (question.type === 'CAA') for (const c of zone.caa ?? []) answers.push({ type: 'CAA', name, ttl, data: { flags: c.flags ?? 0, tag: c.tag, value: c.value } });
      if (question.type === 'SOA' && zone.soa) answers.push({ type: 'SOA', name, ttl, data: { ...zone.soa, refresh: 7200, retry: 3600, expire: 1209600, minimum: 300 } });
    }
    return dnsPacket.encode({
      type: 'response',
      id,
      flags: dnsPacket.RECURSION_AVAILABLE | dnsPacket.RECURSION_DESIRED | RCODE_NUMBERS[rcode] | (dnssecOk && zone?.ad ? dnsPacket.AUTHENTIC_DATA : 0),
      questions: [question],
      answers,
    });
  }
}

/** Whether the query carried an OPT record with the DO bit. */
function doBit(query: dnsPacket.DecodedPacket): boolean {
  return (query.additionals ?? []).some((a) => a.type === 'OPT' && ((a as { flags?: number }).flags ?? 0) & dnsPacket.DNSSEC_OK);
}

/** TXT strings longer than 255 octets go out as several character-strings, as real zones hold them. */
function chunks(text: string): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += 255) parts.push(text.slice(i, i + 255));
  return parts.length > 0 ? parts : [''];
}
