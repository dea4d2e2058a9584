import { DnsFake } from './dns-fake.js';
import { freeLoopbackPort, SmtpFake, type SmtpFakeBehaviour } from './smtp-fake.js';

/**
 * A small internet of mail on loopback for tests above the verifier (API, jobs, monitors): one DNS
 * fake and a few SMTP fakes on 127.0.0.x sharing a port, with the SLUICE_* settings that point an
 * engine at them. Only loopback is ever contacted.
 */
export interface MailWorld {
  dns: DnsFake;
  hosts: Record<string, SmtpFake>;
  env: Record<string, string>;
  /** RCPT TOs all hosts received, and DATA commands (which must stay 0). */
  rcpts(): number;
  dataAttempts(): number;
  sessions(): number;
  stop(): Promise<void>;
}

/** Domains: ok.test (users alice, bob, carol), grey.test (greylists the first RCPT of each address; users dan, dan-sqlite, dan-postgres, so that each store's run meets a fresh greylist), catchall.test, down.test (421), stuck.test (greylists for ever). */
export async function startMailWorld(options: { greylist?: SmtpFakeBehaviour; timeoutMs?: number } = {}): Promise<MailWorld> {
  const dns = new DnsFake();
  const server = await dns.start();
  const port = await freeLoopbackPort();
  const specs: Record<string, [string, SmtpFakeBehaviour]> = {
    'ok.test': ['127.0.0.21', { users: ['alice', 'bob', 'carol', 'info'] }],
    'grey.test': ['127.0.0.22', { users: ['dan', 'dan-sqlite', 'dan-postgres'], greylist: true, ...options.greylist }],
    'catchall.test': ['127.0.0.23', { catchAll: true }],
    'down.test': ['127.0.0.24', { busy: true }],
    'stuck.test': ['127.0.0.25', { users: ['sam'], greylist: true, greylistForever: true }],
  };
  const hosts: Record<string, SmtpFake> = {};
  for (const [domain, [ip, behaviour]] of Object.entries(specs)) {
    const fake = new SmtpFake(ip, behaviour);
    await fake.start(port);
    hosts[domain] = fake;
    dns.set(domain, { mx: [{ preference: 10, exchange: `mx.${domain}` }] }).set(`mx.${domain}`, { a: [ip] });
  }
  dns.set('nullmx.test', { mx: [{ preference: 0, exchange: '.' }] });
  const all = Object.values(hosts);
  return {
    dns,
    hosts,
    env: {
      SLUICE_DNS_SERVERS: server,
      SLUICE_SMTP_PORT: String(port),
      SLUICE_SMTP_ALLOW_PRIVATE: 'true',
      SLUICE_SMTP_HELO: 'verifier.sluice.test',
      SLUICE_SMTP_MAIL_FROM: 'verify@sluice.test',
      SLUICE_SMTP_TIMEOUT_MS: String(options.timeoutMs ?? 2_000),
    },
    rcpts: () => all.reduce((n, f) => n + f.rcpts.length, 0),
    dataAttempts: () => all.reduce((n, f) => n + f.dataAttempts, 0),
    sessions: () => all.reduce((n, f) => n + f.sessions, 0),
    async stop() {
      await Promise.all(all.map((f) => f.stop()));
      await dns.stop();
    },
  };
}
