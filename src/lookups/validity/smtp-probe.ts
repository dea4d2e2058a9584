import type { HostSessions } from './host-sessions.js';
import type { HostFailure, HostItem, ProbeResult, ProbeTarget, SmtpProbeOptions } from './probe-types.js';

/**
 * The SMTP step for a batch: addresses go to their domains' MX hosts in preference order, and the
 * addresses of every domain that shares a host share one session to it (one MAIL FROM, then the
 * catch-all probe of each new domain and each address's RCPT TO): hosting providers serve
 * thousands of domains from a few hosts, and a session per domain would cost each address a
 * banner, an EHLO and a MAIL FROM. A domain goes to its next host only when its host could not be
 * asked at all (refused, silent, 421 at the banner, dropped): a host that answered RCPT has spoken
 * for the domain, 4xx included. A 452 4.5.3 (too many recipients) opens a new session for the rest.
 * The sessions are the process's (HostSessions): a host's session goes on with the next batch's
 * addresses while this batch waits for its other hosts.
 */
export async function probeTargets(options: SmtpProbeOptions, sessions: HostSessions, targets: readonly ProbeTarget[], signal?: AbortSignal): Promise<ProbeResult> {
  await options.catchAll.load(targets.map((t) => t.domain));
  const result: ProbeResult = { addresses: new Map(), catchAll: new Map(targets.map((t) => [t.domain, options.catchAll.get(t.domain) ?? null])), catchAllProbed: new Set(), catchAllWaits: new Map() };
  const failures = new Map<string, HostFailure>();
  for (let rank = 0; !signal?.aborted; rank++) {
    const byHost = new Map<string, HostItem[]>();
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
        const failure = await sessions.ask(host, items, result, signal);
        if (failure) for (const item of items) if (!result.addresses.has(item.address)) failures.set(item.domain, failure);
      }),
    );
  }
  // Another batch's probe of a domain this batch did not ask: its answer, before any verdict (a
  // catch-all domain's accepted address must not be called valid for want of waiting).
  await Promise.all([...result.catchAllWaits].map(async ([domain, wait]) => result.catchAll.get(domain) === null && result.catchAll.set(domain, await wait)));
  for (const target of targets) {
    const last = failures.get(target.domain) ?? { reason: 'smtp_unavailable' as const, evidence: null };
    for (const address of target.addresses) if (!result.addresses.has(address)) result.addresses.set(address, { kind: 'unreachable', ...last });
  }
  return result;
}
