import net from 'node:net';
import tls from 'node:tls';
import type { TlsEvidence } from './validity-result.js';

export interface SmtpReply {
  code: number;
  /** RFC 3463 enhanced status code from the start of the text (`5.1.1`), or null. */
  enhanced: string | null;
  /** The reply's lines joined by a space, without codes. */
  text: string;
  /** The text lines, for EHLO's extension list. */
  lines: string[];
}

export const SMTP_FAILURES = { timeout: 'timeout', closed: 'closed', refused: 'refused' } as const;
export type SmtpFailure = (typeof SMTP_FAILURES)[keyof typeof SMTP_FAILURES];

/** The connection itself failed: no reply to judge, so the next address or MX host is tried. */
export class SmtpConnectionError extends Error {
  constructor(
    readonly failure: SmtpFailure,
    message: string,
  ) {
    super(message);
  }
}

export interface SmtpOpenOptions {
  /** The MX host's name: SNI, and the name in the evidence. */
  host: string;
  /** The IP address connected to, already checked against the address policy. */
  address: string;
  port: number;
  helo: string;
  /** Time allowed for the connection and for each reply. */
  timeoutMs: number;
  signal?: AbortSignal;
}

const REPLY_LINE = /^(\d{3})([ -])(.*)$/;
const ENHANCED = /^([245]\.\d{1,3}\.\d{1,3})\b\s*/;
/** A reply this long is a broken or hostile server, not SMTP (RFC 5321 §4.5.3.1.5: 512 octets a line). */
const MAX_REPLY_BYTES = 64 * 1024;

/**
 * A small SMTP client that can do exactly what verification needs and no more: EHLO (HELO when
 * refused), STARTTLS when offered, MAIL FROM, RCPT TO, RSET and QUIT. It has no way to send DATA:
 * a verifier that can send mail one day will, by a bug, send it to a stranger.
 *
 * Commands are sent one at a time and each waits for its reply (no PIPELINING), so a reply always
 * belongs to the command before it.
 */
export class SmtpSession {
  /** Set after STARTTLS: what the certificate said; null on a plain session. */
  tls: TlsEvidence | null = null;
  readonly extensions = new Set<string>();
  private socket: net.Socket;
  private buffer = '';
  private lines: string[] = [];
  private replies: SmtpReply[] = [];
  private waiter: { resolve: (r: SmtpReply) => void; reject: (e: Error) => void } | undefined;
  private closedWith: SmtpConnectionError | undefined;
  private readonly onData = (chunk: Buffer | string): void => this.receive(chunk.toString('latin1'));

  private constructor(
    socket: net.Socket,
    private readonly options: SmtpOpenOptions,
  ) {
    this.socket = socket;
    this.watch(socket);
  }

  get closed(): boolean {
    return this.closedWith !== undefined;
  }

  /**
   * Connects, reads the banner and greets. A banner other than 220 (421 busy, 554 no service) is
   * returned as the reply with no session; a connection that fails or is silent throws
   * SmtpConnectionError.
   */
  static async open(options: SmtpOpenOptions): Promise<{ session: SmtpSession; banner: SmtpReply } | { session: undefined; banner: SmtpReply }> {
    const socket = await connect(options);
    const session = new SmtpSession(socket, options);
    const banner = await session.read();
    if (banner.code !== 220) {
      session.close();
      return { session: undefined, banner };
    }
    const greeting = await session.greet();
    if (greeting.code !== 250) {
      session.close();
      return { session: undefined, banner: greeting };
    }
    if (session.extensions.has('STARTTLS')) {
      const ready = await session.command('STARTTLS');
      // A server that offers STARTTLS and then refuses it is answered in the clear, as MTAs do.
      if (ready.code === 220) {
        await session.upgrade();
        const again = await session.greet();
        if (again.code !== 250) {
          session.close();
          return { session: undefined, banner: again };
        }
      }
    }
    return { session, banner };
  }

  mailFrom(address: string): Promise<SmtpReply> {
    return this.command(`MAIL FROM:<${address}>`);
  }

  rcptTo(address: string): Promise<SmtpReply> {
    return this.command(`RCPT TO:<${address}>`);
  }

  /**
   * RCPT TO for each address: sent in one write when the server offers PIPELINING (RFC 2920), one
   * at a time when it does not. Yields each reply as it comes, in order, so that a connection lost
   * in the middle keeps the answers given before it; a caller that stops early has the replies
   * still owed read and dropped, so the next command reads its own.
   */
  async *rcptToEach(addresses: readonly string[]): AsyncGenerator<SmtpReply> {
    if (!this.extensions.has('PIPELINING')) {
      for (const address of addresses) yield await this.rcptTo(address);
      return;
    }
    if (this.closedWith) throw this.closedWith;
    this.socket.write(addresses.map((a) => `RCPT TO:<${a}>\r\n`).join(''));
    let owed = addresses.length;
    try {
      while (owed > 0) {
        const reply = await this.read();
        owed--;
        yield reply;
      }
    } finally {
      for (; owed > 0 && !this.closedWith; owed--) await this.read().catch(() => undefined);
    }
  }

  /** Ends the transaction without a message, so the session can check another domain's addresses. */
  rset(): Promise<SmtpReply> {
    return this.command('RSET');
  }

  /**
   * Says goodbye politely and waits for the connection to be gone, so that a per-host slot given
   * back after this is never one whose connection the server still counts; never throws.
   */
  async quit(): Promise<void> {
    if (!this.closed) await this.command('QUIT').catch(() => undefined);
    const socket = this.socket;
    if (!socket.destroyed) {
      const gone = new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, this.options.timeoutMs);
        socket.once('close', () => {
          clearTimeout(timer);
          resolve();
        });
      });
      socket.end();
      await gone;
    }
    this.close();
  }

  close(): void {
    this.closedWith ??= new SmtpConnectionError(SMTP_FAILURES.closed, 'session closed');
    this.socket.destroy();
  }

  private async greet(): Promise<SmtpReply> {
    let reply = await this.command(`EHLO ${this.options.helo}`);
    if (reply.code >= 500 && reply.code < 600) reply = await this.command(`HELO ${this.options.helo}`);
    this.extensions.clear();
    if (reply.code === 250) for (const line of reply.lines.slice(1)) this.extensions.add(line.split(' ')[0]!.toUpperCase());
    return reply;
  }

  private async upgrade(): Promise<void> {
    const plain = this.socket;
    plain.removeListener('data', this.onData);
    const secure = await new Promise<tls.TLSSocket>((resolve, reject) => {
      // The certificate is recorded, not enforced: port 25 is opportunistic TLS (RFC 3207), and a
      // self-signed certificate says nothing about whether the mailbox exists.
      const socket = tls.connect({ socket: plain, rejectUnauthorized: false, ...(net.isIP(this.options.host) === 0 ? { servername: this.options.host } : {}) });
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new SmtpConnectionError(SMTP_FAILURES.timeout, `TLS handshake with ${this.options.host} timed out`));
      }, this.options.timeoutMs);
      socket.once('secureConnect', () => {
        clearTimeout(timer);
        resolve(socket);
      });
      socket.once('error', (error) => {
        clearTimeout(timer);
        reject(new SmtpConnectionError(SMTP_FAILURES.closed, `TLS with ${this.options.host} failed: ${error.message}`));
      });
    });
    const cert = secure.getPeerCertificate();
    const issuer = cert?.issuer ? (firstOf(cert.issuer.O) ?? firstOf(cert.issuer.CN) ?? null) : null;
    this.tls = {
      version: secure.getProtocol(),
      authorized: secure.authorized,
      authorization_error: secure.authorizationError === null || secure.authorizationError === undefined ? null : String(secure.authorizationError),
      issuer,
      valid_to: cert?.valid_to ? new Date(cert.valid_to).toISOString() : null,
    };
    this.socket = secure;
    this.watch(secure);
  }

  private command(line: string): Promise<SmtpReply> {
    // The guard against a future edit: this client never sends a message, by construction.
    if (/^(DATA|BDAT)\b/i.test(line)) throw new Error('SmtpSession never sends DATA');
    if (this.closedWith) return Promise.reject(this.closedWith);
    this.socket.write(`${line}\r\n`);
    return this.read();
  }

  private read(): Promise<SmtpReply> {
    const ready = this.replies.shift();
    if (ready) return Promise.resolve(ready);
    if (this.closedWith) return Promise.reject(this.closedWith);
    return new Promise<SmtpReply>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiter = undefined;
        this.fail(new SmtpConnectionError(SMTP_FAILURES.timeout, `${this.options.host} did not answer within ${this.options.timeoutMs} ms`));
        reject(this.closedWith);
      }, this.options.timeoutMs);
      this.waiter = {
        resolve: (r) => {
          clearTimeout(timer);
          resolve(r);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  private watch(socket: net.Socket): void {
    socket.on('data', this.onData);
    socket.on('error', () => this.fail(new SmtpConnectionError(SMTP_FAILURES.closed, `connection to ${this.options.host} failed`)));
    socket.on('close', () => this.fail(new SmtpConnectionError(SMTP_FAILURES.closed, `${this.options.host} closed the connection`)));
    const abort = (): void => this.fail(new SmtpConnectionError(SMTP_FAILURES.timeout, 'verification was stopped'));
    this.options.signal?.addEventListener('abort', abort, { once: true });
    socket.once('close', () => this.options.signal?.removeEventListener('abort', abort));
  }

  private fail(error: SmtpConnectionError): void {
    // The first failure is the one reported; the close that follows it adds nothing.
    if (this.closedWith) return;
    this.closedWith = error;
    this.socket.destroy();
    const waiter = this.waiter;
    this.waiter = undefined;
    waiter?.reject(error);
  }

  private receive(text: string): void {
    this.buffer += text;
    if (this.buffer.length > MAX_REPLY_BYTES) return this.fail(new SmtpConnectionError(SMTP_FAILURES.closed, `${this.options.host} sent an over-long reply`));
    let end: number;
    while ((end = this.buffer.indexOf('\n')) >= 0) {
      const line = this.buffer.slice(0, end).replace(/\r$/, '');
      this.buffer = this.buffer.slice(end + 1);
      const match = REPLY_LINE.exec(line);
      if (!match) return this.fail(new SmtpConnectionError(SMTP_FAILURES.closed, `${this.options.host} sent a line that is not an SMTP reply`));
      this.lines.push(match[3]!);
      if (match[2] === ' ') this.deliver(Number(match[1]), this.lines.splice(0));
    }
  }

  private deliver(code: number, lines: string[]): void {
    const enhanced = ENHANCED.exec(lines[0] ?? '');
    const reply: SmtpReply = {
      code,
      enhanced: enhanced ? enhanced[1]! : null,
      text: lines.map((l) => l.replace(ENHANCED, '')).join(' ').trim(),
      lines,
    };
    const waiter = this.waiter;
    this.waiter = undefined;
    if (waiter) waiter.resolve(reply);
    else this.replies.push(reply);
  }
}

function firstOf(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}

function connect(options: SmtpOpenOptions): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: options.address, port: options.port });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new SmtpConnectionError(SMTP_FAILURES.timeout, `connecting to ${options.host} (${options.address}) timed out`));
    }, options.timeoutMs);
    socket.once('connect', () => {
      clearTimeout(timer);
      socket.removeAllListeners('error');
      resolve(socket);
    });
    socket.once('error', (error: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      reject(new SmtpConnectionError(error.code === 'ECONNREFUSED' ? SMTP_FAILURES.refused : SMTP_FAILURES.closed, `connecting to ${options.host} (${options.address}): ${error.code ?? error.message}`));
    });
  });
}
