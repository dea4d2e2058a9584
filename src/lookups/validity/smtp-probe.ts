import { randomBytes } from 'node:crypto';
import type { DnsResolver } from '../dns/dns-resolver.js';
import type { CatchAllCache } from './catch-all-cache.js';
import type { HostLimiter } from './host-limiter.js';
import { hostAddresses } from './mx-step.js';
import { classifyRcpt, type RcptAnswer } from './rcpt-reply.js';
import { SMTP_FAILURES, SmtpConnectionError, SmtpSession, type SmtpReply } from './smtp-session.js';
import type { SmtpEvidence, TlsEvidence } from './validity-result.js';

export interface SmtpProbeOptions {
  resolver: DnsResolver;
  hostLimiter: HostLimiter;
  catchAll: CatchAllCache;
  port: number;
  helo: string;
  mailFrom: string;
  timeoutMs: number;
  /** Tests only: lets the prober reach loopback and private MX addresses (the address policy's switch). */
  allowPrivate: boolean;
  /**
   * Why an IP is not public, or undefined: the webhook address policy's `blockedReason`, passed in
   * by the composition root (lookups do not import webhooks).
   */
  blockedReason: (ip: string) => string | undefined;
  /** Counts sessions opened, for the bench's sessions per address. */
  onSession?: () => void;
  randomLocal?: () => string;
}

/** What the SMTP step found for one address. */
export type AddressProbe =
  | { kind: 'answered'; answer: RcptAnswer; evidence: SmtpEvidence }
  /** No host could be asked: the transient reason and what was seen last. */
  | { kind: 'unreachable'; reason: 'timeout' | 'smtp_unavailable' | 'blocked_address'; evidence: SmtpEvidence | null };

export interface DomainProbe {
  addresses: Map<string, AddressProbe>;
  catchAll: boolean | null;
}

/** New sessions one host gets for the rest of a list after 452 4.5.3 or a 421 in the middle. */
const MAX_SESSIONS_PER_HOST = 20;

/**
 * The SMTP step for several addresses of one domain: MX hosts in preference order, the next host
 * only when one could not be asked at all (refused, silent, 421 at the banner, dropped): a host
 * that answered RCPT has spoken for the domain, including with a 4xx. On one host the addresses
 * share one session, and a new one opens when the server has had enough recipients (452 4.5.3).
 */
export async function probeDomain(options: SmtpProbeOptions, domain: string, hosts: readonly string[], addresses: readonly string[], signal?: AbortSignal): Promise<DomainProbe> {
  const result: DomainProbe = { addresses: new Map(), catchAll: options.catchAll.get(domain) ?? null };
  let pending = [...addresses];
  let last: { reason: 'timeout' | 'smtp_unavailable' | 'blocked_address'; evidence: SmtpEvidence | null } = { reason: 'smtp_unavailable', evidence: null };
  for (const host of hosts) {
    if (pending.length === 0 || signal?.aborted) break;
    const outcome = await options.hostLimiter.run(host, () => probeHost(options, domain, host, pending, result, signal));
    pending = pending.filter((a) => !result.addresses.has(a));
    if (outcome !== undefined) last = outcome;
  }
  for (const address of pending) result.addresses.set(address, { kind: 'unreachable', ...last });
  return result;
}

type HostFailure = { reason: 'timeout' | 'smtp_unavailable' | 'blocked_address'; evidence: SmtpEvidence | null };

/** Asks one MX host about `pending`, filling `result`; returns why it could not finish, if it could not. */
async function probeHost(options: SmtpProbeOptions, domain: string, host: string, pending: readonly string[], result: DomainProbe, signal?: AbortSignal): Promise<HostFailure | undefined> {
  const { addresses, transient } = await hostAddresses(options.resolver, host, signal);
  if (addresses.length === 0) return { reason: transient ? 'timeout' : 'smtp_unavailable', evidence: null };
  // The address policy on every address an MX resolves to: an MX that points into a private network
  // is how a verifier is turned into a port scanner of the network it runs in.
  const allowed = options.allowPrivate ? addresses : addresses.filter((a) => options.blockedReason(a) === undefined);
  if (allowed.length === 0) return { reason: 'blocked_address', evidence: { host, code: null, enhanced_code: null, text: `${host} resolves only to non-public addresses`, tls: null } };
  let failure: HostFailure | undefined;
  for (const address of allowed) {
    failure = await probeAddress(options, domain, host, address, pending, result, signal);
    if (failure === undefined) return undefined;
    if (pending.every((a) => result.addresses.has(a))) return undefined;
  }
  return failure;
}

async function probeAddress(
  options: SmtpProbeOptions,
  domain: string,
  host: string,
  ip: string,
  pending: readonly string[],
  result: DomainProbe,
  signal?: AbortSignal,
): Promise<HostFailure | undefined> {
  let todo = pending.filter((a) => !result.addresses.has(a));
  for (let sessions = 0; todo.length > 0 && sessions < MAX_SESSIONS_PER_HOST; sessions++) {
    let session: SmtpSession | undefined;
    try {
      options.onSession?.();
      const opened = await SmtpSession.open({ host, address: ip, port: options.port, helo: options.helo, timeoutMs: options.timeoutMs, ...(signal ? { signal } : {}) });
      if (!opened.session) return { reason: 'smtp_unavailable', evidence: evidenceOf(host, opened.banner, null) };
      session = opened.session;
      const from = await session.mailFrom(options.mailFrom);
      if (from.code !== 250) {
        // MAIL FROM refused: every address gets the server's word, as a temporary or a policy answer.
        const answer: RcptAnswer = from.code >= 400 && from.code < 500 ? { kind: 'temporary' } : classifyRcpt(from);
        for (const a of todo) result.addresses.set(a, { kind: 'answered', answer: answer.kind === 'accepted' ? { kind: 'temporary' } : answer, evidence: evidenceOf(host, from, session.tls) });
        await session.quit();
        return undefined;
      }
      if (result.catchAll === null && todo.some((a) => !result.addresses.has(a))) {
        const probe = classifyRcpt(await session.rcptTo(`${(options.randomLocal ?? randomLocal)()}@${domain}`));
        if (probe.kind === 'accepted') result.catchAll = true;
        else if (probe.kind === 'rejected') result.catchAll = false;
        if (result.catchAll !== null) options.catchAll.set(domain, result.catchAll);
      }
      let full = false;
      for (const address of todo) {
        const reply = await session.rcptTo(address);
        const answer = classifyRcpt(reply);
        if (answer.kind === 'too_many_recipients') {
          full = true;
          break;
        }
        result.addresses.set(address, { kind: 'answered', answer, evidence: evidenceOf(host, reply, session.tls) });
      }
      await session.quit();
      todo = todo.filter((a) => !result.addresses.has(a));
      if (!full) return undefined;
    } catch (e: unknown) {
      session?.close();
      if (!(e instanceof SmtpConnectionError)) throw e;
      const reason = e.failure === SMTP_FAILURES.timeout ? 'timeout' : 'smtp_unavailable';
      const evidence = { host, code: null, enhanced_code: null, text: e.message, tls: session?.tls ?? null };
      todo = todo.filter((a) => !result.addresses.has(a));
      // A host that answered some addresses and then dropped gets one more session for the rest;
      // one that failed before any answer is passed over for the next address or MX host.
      if (todo.length === pending.length) return { reason, evidence };
      if (sessions + 1 >= MAX_SESSIONS_PER_HOST) return { reason, evidence };
    }
  }
  return todo.length === 0 ? undefined : { reason: 'smtp_unavailable', evidence: null };
}

function evidenceOf(host: string, reply: SmtpReply, tls: TlsEvidence | null): SmtpEvidence {
  return { host, code: reply.code, enhanced_code: reply.enhanced, text: reply.text.slice(0, 300), tls };
}

/** A local part no person has: 20 random letters and digits. */
function randomLocal(): string {
  return `x${randomBytes(12).toString('base64url').replace(/[-_]/g, '0').toLowerCase().slice(0, 19)}`;
}
