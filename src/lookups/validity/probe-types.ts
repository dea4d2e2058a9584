/** The SMTP step's shapes, shared by the batch's step (smtp-probe.ts) and the host sessions. */
import type { DnsResolver } from '../dns/dns-resolver.js';
import type { CatchAllCache } from './catch-all-cache.js';
import type { HostLimiter } from './host-limiter.js';
import type { RcptAnswer } from './rcpt-reply.js';
import type { SmtpEvidence } from './validity-result.js';

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
  /** Resolves when a new connection to the host may start (HostPacer); none: no pacing. */
  pace?: (host: string) => Promise<unknown>;
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
  /** Domains whose catch-all another batch's probe, asked already, will answer: the batch waits for it. */
  catchAllWaits: Map<string, Promise<boolean | null>>;
}

/** Why a host could not be asked about an address. */
export type HostFailure = { reason: 'timeout' | 'smtp_unavailable' | 'blocked_address'; evidence: SmtpEvidence | null };

/** Addresses of one domain to ask one MX host about, for one batch. */
export interface HostItem {
  domain: string;
  address: string;
}
