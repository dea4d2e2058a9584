import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { SMTPServer, type SMTPServerOptions } from 'smtp-server';

/** How one fake mail server behaves; the defaults are a plain, well-behaved server. */
export interface SmtpFakeBehaviour {
  /** Local parts (or whole addresses) that exist; others get 550 5.1.1. */
  users?: string[];
  /** Accept every recipient. */
  catchAll?: boolean;
  /** Per-address replies that win over `users`, e.g. `{ 'full@x.test': [552, '5.2.2 Mailbox full'] }`. */
  replies?: Record<string, [number, string]>;
  /** Greylist: the first RCPT of each recipient gets 451 4.7.1; any later one within the cap is judged normally. */
  greylist?: boolean;
  /** With `greylist`: never let anyone through (a server that greylists past every retry). */
  greylistForever?: boolean;
  /** Wait this long before the 220 banner. */
  bannerDelayMs?: number;
  /** Answer 421 at connect. */
  busy?: boolean;
  /** Close the connection when MAIL FROM comes (the command after EHLO). */
  dropAfterEhlo?: boolean;
  /** Recipients per session before 452 4.5.3. */
  maxRecipients?: number;
  /** Offer STARTTLS with smtp-server's own self-signed certificate. */
  starttls?: boolean;
  /** Wait this long before each reply to RCPT TO (the bench's SMTP latency). */
  replyDelayMs?: number;
  /** Offer PIPELINING (RFC 2920) in the EHLO reply, as smtp-server does unless told not to; default true. */
  pipelining?: boolean;
}

/**
 * A loopback SMTP server (smtp-server) that behaves like the real kinds a verifier meets: catch-all,
 * 550 5.1.1, greylisting, slow banners, drops, STARTTLS, 421, 452 4.5.3. Servers of one test share a
 * port on distinct loopback addresses (127.0.0.2, .3, ...), as MX hosts share port 25. `dataAttempts`
 * counts DATA commands: a verifier that ever sends one fails its test.
 */
export class SmtpFake {
  sessions = 0;
  rcpts: string[] = [];
  dataAttempts = 0;
  /** Connections open now, and the most at once: what a per-host limit must keep down. */
  active = 0;
  peakActive = 0;
  /** The most RCPT TO commands that came in one read: more than 1 only from a pipelining client. */
  mostRcptsInOneRead = 0;
  /** MAIL FROM commands: one a transaction. */
  mailFroms = 0;
  /** Errors smtp-server reported for connections (resets by killed clients). */
  connectionErrors: Error[] = [];
  /** When each connection came (Date.now()), in order. */
  connectedAt: number[] = [];
  private server: SMTPServer | undefined;
  private readonly greylisted = new Set<string>();
  private readonly sockets = new Map<number, net.Socket>();

  constructor(
    readonly address: string,
    /** Read at every command: a test may change it between runs (a mailbox that goes away). */
    readonly behaviour: SmtpFakeBehaviour = {},
  ) {}

  async start(port: number): Promise<number> {
    const b = this.behaviour;
    const options: SMTPServerOptions = {
      authOptional: true,
      disabledCommands: b.starttls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
      logger: false,
      hidePIPELINING: b.pipelining === false,
      onConnect: (_session, callback) => {
        this.sessions++;
        if (b.busy) return callback(Object.assign(new Error('4.3.2 Too busy, try later'), { responseCode: 421 }));
        if (b.bannerDelayMs) setTimeout(() => callback(), b.bannerDelayMs);
        else callback();
      },
      onMailFrom: (_address, session, callback) => {
        this.mailFroms++;
        if (b.dropAfterEhlo) {
          this.sockets.get(session.remotePort)?.destroy();
          return;
        }
        callback();
      },
      onRcptTo: (address, session, callback) => {
        const rcpt = address.address;
        this.rcpts.push(rcpt);
        const reply = (code: number, text: string): void => {
          const done = (): void => (code === 250 ? callback() : callback(Object.assign(new Error(text), { responseCode: code })));
          if (b.replyDelayMs) setTimeout(done, b.replyDelayMs);
          else done();
        };
        if (b.maxRecipients !== undefined && session.envelope.rcptTo.length >= b.maxRecipients) return reply(452, '4.5.3 Too many recipients');
        if (b.greylist && (b.greylistForever || !this.greylisted.has(rcpt))) {
          this.greylisted.add(rcpt);
          return reply(451, '4.7.1 Greylisted, please try again later');
        }
        const fixed = b.replies?.[rcpt];
        if (fixed) return reply(fixed[0], fixed[1]);
        const local = rcpt.split('@')[0]!;
        if (b.catchAll || b.users?.includes(local) || b.users?.includes(rcpt)) return reply(250, 'OK');
        reply(550, '5.1.1 User unknown');
      },
      onData: (stream, _session, callback) => {
        this.dataAttempts++;
        stream.resume();
        stream.on('end', () => callback(Object.assign(new Error('5.7.1 This fake never takes mail'), { responseCode: 554 })));
      },
    };
    const server = new SMTPServer(options);
    this.server = server;
    const inner = (server as unknown as { server: net.Server }).server;
    inner.on('connection', (socket: net.Socket) => {
      const remote = socket.remotePort!;
      this.sockets.set(remote, socket);
      this.active++;
      this.connectedAt.push(Date.now());
      this.peakActive = Math.max(this.peakActive, this.active);
      socket.on('data', (chunk: Buffer) => {
        this.mostRcptsInOneRead = Math.max(this.mostRcptsInOneRead, chunk.toString('latin1').match(/^RCPT TO:/gim)?.length ?? 0);
      });
      socket.once('close', () => {
        this.active--;
        this.sockets.delete(remote);
      });
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, this.address, () => resolve());
    });
    // A verifier killed with SIGKILL (the crash tests) resets its connections, and smtp-server
    // reports each reset as an 'error' of the server, which with no listener ends the test process:
    // the fake's client is gone, which is no error of the test's. Kept for a test to look at.
    server.on('error', (error: Error) => this.connectionErrors.push(error));
    return (inner.address() as AddressInfo).port;
  }

  async stop(): Promise<void> {
    for (const socket of this.sockets.values()) socket.destroy();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** A port free on every loopback address the test will use, found by binding 127.0.0.1:0. */
export async function freeLoopbackPort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
