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

/** A domain's addresses and its MX hosts in preference order. */
export interface ProbeTarget {
  domain: string;
  hosts: readonly string[];
  addresses: readonly string[];
}

export interface ProbeResult {
  addresses: Map<string, AddressProbe>;
  /** Per domain: catch-all (true), not (false), or not known (null). */
  catchAll: Map<string, boolean | null>;
  /** Domains whose catch-all probe this batch has made, whatever it said: one per domain per batch. */
  catchAllProbed: Set<string>;
}

/** New sessions one host gets for the rest of a list after 452 4.5.3 or a drop in the middle. */
const MAX_SESSIONS_PER_HOST = 20;

type HostFailure = { reason: 'timeout' | 'smtp_unavailable' | 'blocked_address'; evidence: SmtpEvidence | null };
type Item = { domain: string; address: string };

/**
 * The SMTP step for a batch: addresses go to their domains' MX hosts in preference order, and the
 * addresses of every domain that shares a host share one session to it (one MAIL FROM, then the
 * catch-all probe of each new domain and each address's RCPT TO): hosting providers serve
 * thousands of domains from a few hosts, and a session per domain would cost each address a
 * banner, an EHLO and a MAIL FROM. A domain goes to its next host only when its host could not be
 * asked at all (refused, silent, 421 at the banner, dropped): a host that answered RCPT has spoken
 * for the domain, 4xx included. A 452 4.5.3 (too many recipients) opens a new session for the rest.
 */
export async function probeTargets(options: SmtpProbeOptions, targets: readonly ProbeTarget[], signal?: AbortSignal): Promise<ProbeResult> {
  const result: ProbeResult = { addresses: new Map(), catchAll: new Map(targets.map((t) => [t.domain, options.catchAll.get(t.domain) ?? null])), catchAllProbed: new Set() };
  const failures = new Map<string, HostFailure>();
  for (let rank = 0; !signal?.aborted; rank++) {
    const byHost = new Map<string, Item[]>();
    for (const target of targets) {
      const host = target.hosts[rank];
      if (host === undefined) continue;
      for (const address of target.addresses) {
        if (result.addresses.has(address)) continue;
        const items = byHost.get(host) ?? [];
        items.push({ domain: target.domain, address });
        byHost.set(host, items);
      }
    }
    if (byHost.size === 0) break;
    await Promise.all(
      [...byHost].map(async ([host, items]) => {
        items.sort((a, b) => (a.domain < b.domain ? -1 : a.domain > b.domain ? 1 : 0));
        const failure = await options.hostLimiter.run(host, () => probeHost(options, host, items, result, signal));
        if (failure) for (const item of items) if (!result.addresses.has(item.address)) failures.set(item.domain, failure);
      }),
    );
  }
  for (const target of targets) {
    const last = failures.get(target.domain) ?? { reason: 'smtp_unavailable' as const, evidence: null };
    for (const address of target.addresses) if (!result.addresses.has(address)) result.addresses.set(address, { kind: 'unreachable', ...last });
  }
  return result;
}

/** Asks one MX host about `items`, filling `result`; returns why it could not finish, if it could not. */
async function probeHost(options: SmtpProbeOptions, host: string, items: readonly Item[], result: ProbeResult, signal?: AbortSignal): Promise<HostFailure | undefined> {
  const { addresses, transient } = await hostAddresses(options.resolver, host, signal);
  if (addresses.length === 0) return { reason: transient ? 'timeout' : 'smtp_unavailable', evidence: null };
  // The address policy on every address an MX resolves to: an MX that points into a private network
  // is how a verifier is turned into a port scanner of the network it runs in.
  const allowed = options.allowPrivate ? addresses : addresses.filter((a) => options.blockedReason(a) === undefined);
  if (allowed.length === 0) return { reason: 'blocked_address', evidence: { host, code: null, enhanced_code: null, text: `${host} resolves only to non-public addresses`, tls: null } };
  let failure: HostFailure | undefined;
  for (const ip of allowed) {
    failure = await probeAddress(options, host, ip, items, result, signal);
    if (failure === undefined || items.every((i) => result.addresses.has(i.address))) return undefined;
  }
  return failure;
}

async function probeAddress(options: SmtpProbeOptions, host: string, ip: string, items: readonly Item[], result: ProbeResult, signal?: AbortSignal): Promise<HostFailure | undefined> {
  let todo = items.filter((i) => !result.addresses.has(i.address));
  const started = todo.length;
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
        for (const i of todo) result.addresses.set(i.address, { kind: 'answered', answer: answer.kind === 'accepted' ? { kind: 'temporary' } : answer, evidence: evidenceOf(host, from, session.tls) });
        await session.quit();
        return undefined;
      }
      let full = false;
      for (const item of todo) {
        if (result.catchAll.get(item.domain) === null && !result.catchAllProbed.has(item.domain)) {
          const probe = classifyRcpt(await session.rcptTo(`${(options.randomLocal ?? randomLocal)()}@${item.domain}`));
          if (probe.kind === 'too_many_recipients') {
            full = true;
            break;
          }
          // A 4xx is not kept in the cache: a later batch asks again.
          result.catchAllProbed.add(item.domain);
          const catchAll = probe.kind === 'accepted' ? true : probe.kind === 'rejected' ? false : null;
          result.catchAll.set(item.domain, catchAll);
          if (catchAll !== null) options.catchAll.set(item.domain, catchAll);
        }
        const reply = await session.rcptTo(item.address);
        const answer = classifyRcpt(reply);
        if (answer.kind === 'too_many_recipients') {
          full = true;
          break;
        }
        result.addresses.set(item.address, { kind: 'answered', answer, evidence: evidenceOf(host, reply, session.tls) });
      }
      await session.quit();
      todo = todo.filter((i) => !result.addresses.has(i.address));
      if (!full) return undefined;
    } catch (e: unknown) {
      session?.close();
      if (!(e instanceof SmtpConnectionError)) throw e;
      const reason = e.failure === SMTP_FAILURES.timeout ? 'timeout' : 'smtp_unavailable';
      const evidence = { host, code: null, enhanced_code: null, text: e.message, tls: session?.tls ?? null };
      todo = todo.filter((i) => !result.addresses.has(i.address));
      // A host that answered some addresses and then dropped gets another session for the rest;
      // one that failed before any answer is passed over for the next address or MX host.
      if (todo.length === started) return { reason, evidence };
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
