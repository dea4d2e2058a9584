/**
 * The loopback mail world of the `validity` bench, in a process of its own (so that its CPU is not
 * the engine's): one DNS server (dns-packet over UDP) answering after `dnsMs`, and `hosts` SMTP
 * servers (smtp-server) on 127.0.1.1, 127.0.1.2, ... sharing one port, each reply to the banner,
 * MAIL FROM and RCPT TO after `smtpMs`. Domain dN.bench has MX mx(N % hosts).bench; local parts
 * that start with `u` exist, others get 550 5.1.1; every 50th domain is catch-all. Nothing but
 * loopback is ever bound or contacted.
 *
 *   node dist/bench/mail-simulator.js --hosts 20 --dns-ms 2 --smtp-ms 20
 *
 * Prints {"dns":"127.0.0.1:P","smtpPort":Q} when ready; on a line `stats` on stdin prints the
 * counters; exits when stdin closes.
 */
import dgram from 'node:dgram';
import net from 'node:net';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import dnsPacket from 'dns-packet';
import { SMTPServer } from 'smtp-server';

const { values } = parseArgs({ options: { hosts: { type: 'string', default: '20' }, 'dns-ms': { type: 'string', default: '2' }, 'smtp-ms': { type: 'string', default: '20' } } });
const hosts = Number(values.hosts);
const dnsMs = Number(values['dns-ms']);
const smtpMs = Number(values['smtp-ms']);
// Where the bench's time goes, from the servers' side: sessionMs is the time sessions were open
// (summed), clientMs the time the servers waited for the verifier's next command after a reply
// (the client's share of every round trip: its event loop, its batching), firstMs/lastMs the span (epoch ms, for the engine to compare with its own clock).
const stats = { dnsQueries: 0, sessions: 0, rcpts: 0, data: 0, peakPerHost: 0, sessionMs: 0, clientMs: 0, firstMs: 0, lastMs: 0 };
const opened = new Map<string, number>();
const replied = new Map<string, number>();
/** Replies after `ms`, noting when, so that the next command's wait is the client's. */
const reply = (id: string, ms: number, fn: () => void): void =>
  later(ms, () => {
    replied.set(id, performance.now());
    fn();
  });
const arrived = (id: string): void => {
  const at = replied.get(id);
  if (at !== undefined) stats.clientMs += performance.now() - at;
};
const active = new Map<string, number>();

const hostIp = (i: number): string => `127.0.1.${i + 1}`;
const later = (ms: number, fn: () => void): void => void setTimeout(fn, ms);

async function startDns(): Promise<string> {
  const socket = dgram.createSocket('udp4');
  socket.on('message', (message, peer) => {
    stats.dnsQueries++;
    const query = dnsPacket.decode(message);
    const q = query.questions?.[0];
    if (!q) return;
    const name = q.name.toLowerCase();
    const answers: dnsPacket.Answer[] = [];
    let rcode = 0;
    const domain = /^d(\d+)\.bench$/.exec(name);
    const mx = /^mx(\d+)\.bench$/.exec(name);
    if (domain && q.type === 'MX') answers.push({ type: 'MX', name: q.name, ttl: 3600, data: { preference: 10, exchange: `mx${Number(domain[1]) % hosts}.bench` } });
    else if (mx && q.type === 'A') answers.push({ type: 'A', name: q.name, ttl: 3600, data: hostIp(Number(mx[1])) });
    else if (!domain && !mx) rcode = 3;
    const reply = dnsPacket.encode({ type: 'response', id: query.id ?? 0, flags: dnsPacket.RECURSION_AVAILABLE | rcode, questions: [q], answers });
    later(dnsMs, () => socket.send(reply, peer.port, peer.address));
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(socket.address() as net.AddressInfo).port}`;
}

async function startSmtp(index: number, port: number): Promise<number> {
  const ip = hostIp(index);
  const fail = (code: number, text: string) => Object.assign(new Error(text), { responseCode: code });
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['AUTH', 'STARTTLS'],
    logger: false,
    maxClients: 10_000,
    onConnect: (session, cb) => {
      stats.sessions++;
      const now0 = performance.now();
      opened.set(session.id, now0);
      if (stats.firstMs === 0) stats.firstMs = Date.now();
      const now = (active.get(ip) ?? 0) + 1;
      active.set(ip, now);
      stats.peakPerHost = Math.max(stats.peakPerHost, now);
      reply(session.id, smtpMs, () => cb());
    },
    onClose: (session) => {
      active.set(ip, (active.get(ip) ?? 1) - 1);
      const at = performance.now();
      stats.sessionMs += at - (opened.get(session.id) ?? at);
      stats.lastMs = Date.now();
      opened.delete(session.id);
      replied.delete(session.id);
    },
    onMailFrom: (_a, session, cb) => {
      arrived(session.id);
      reply(session.id, smtpMs, () => cb());
    },
    onRcptTo: (address, session, cb) => {
      arrived(session.id);
      stats.rcpts++;
      const [local = '', domain = ''] = address.address.split('@');
      const n = Number(/^d(\d+)/.exec(domain)?.[1] ?? 0);
      reply(session.id, smtpMs, () => (local.startsWith('u') || n % 50 === 0 ? cb() : cb(fail(550, '5.1.1 User unknown'))));
    },
    onData: (stream, _s, cb) => {
      stats.data++;
      stream.resume();
      stream.on('end', () => cb(fail(554, '5.7.1 no mail here')));
    },
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, ip, () => resolve());
  });
  return ((server as unknown as { server: net.Server }).server.address() as net.AddressInfo).port;
}

const dns = await startDns();
const first = await startSmtp(0, 0);
for (let i = 1; i < hosts; i++) await startSmtp(i, first);
process.stdout.write(`${JSON.stringify({ dns, smtpPort: first })}\n`);
const input = readline.createInterface({ input: process.stdin });
input.on('line', (line) => {
  if (line.trim() === 'stats') process.stdout.write(`${JSON.stringify(stats)}\n`);
});
input.on('close', () => process.exit(0));
