import os from 'node:os';
import type { Config } from '../config/load-config.js';
import { CachingDnsResolver } from '../lookups/dns/caching-dns-resolver.js';
import type { DnsResolver } from '../lookups/dns/dns-resolver.js';
import { SystemDnsResolver } from '../lookups/dns/system-dns-resolver.js';
import { UdpDnsResolver } from '../lookups/dns/udp-dns-resolver.js';
import type { SlotHolder } from '../lookups/shared-semaphore.js';
import { SharedHostLimiter } from '../lookups/validity/host-limiter.js';
import { HostPacer } from '../lookups/validity/host-pacer.js';
import { CatchAllCache, CATCH_ALL_WINDOW_MS, type SharedAnswers } from '../lookups/validity/catch-all-cache.js';
import { ValidityVerifier } from '../lookups/validity/validity-verifier.js';
import type { Clock } from '../shared/clock.js';
import type { SharedRecords } from '../shared/shared-records.js';
import { blockedReason } from '../webhooks/address-policy.js';

/**
 * The shared DNS layer as configured: the servers of SLUICE_DNS_SERVERS over UDP, or the system
 * resolver, behind one TTL cache per process.
 */
export function openDnsResolver(config: Config, clock: Clock): DnsResolver {
  const servers = config.validity.dnsServers;
  const inner = servers === undefined ? new SystemDnsResolver() : new UdpDnsResolver({ servers });
  return new CachingDnsResolver(inner, clock);
}

/**
 * The email verifier with its real parts: the shared DNS layer, per-MX-host limits in the store's
 * slots and connection pacing in its shared records, catch-all answers in the store's result cache, and the webhook address policy on every MX
 * address (off only with SLUICE_SMTP_ALLOW_PRIVATE).
 */
export function openValidityVerifier(config: Config, clock: Clock, slots: SlotHolder, records: SharedRecords, answers: SharedAnswers, resolver: DnsResolver = openDnsResolver(config, clock)): ValidityVerifier {
  const v = config.validity;
  const helo = v.helo ?? os.hostname();
  const pacer = new HostPacer(records, clock, v.connectIntervalMs);
  return new ValidityVerifier({
    resolver,
    clock,
    probe: v.probe,
    port: v.smtpPort,
    helo,
    mailFrom: v.mailFrom ?? `postmaster@${helo}`,
    timeoutMs: v.timeoutMs,
    allowPrivate: v.allowPrivate,
    blockedReason,
    hostLimiter: new SharedHostLimiter(slots, clock, v.hostConcurrency),
    hostConcurrency: v.hostConcurrency,
    pace: (host) => pacer.wait(host),
    catchAll: new CatchAllCache(clock, CATCH_ALL_WINDOW_MS, undefined, answers),
  });
}
