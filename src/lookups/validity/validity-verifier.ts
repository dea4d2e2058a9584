import type { Clock } from '../../shared/clock.js';
import type { DnsResolver } from '../dns/dns-resolver.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { CatchAllCache } from './catch-all-cache.js';
import { flagsOf } from './flags.js';
import { LocalHostLimiter, type HostLimiter } from './host-limiter.js';
import { HostSessions } from './host-sessions.js';
import { mxStep } from './mx-step.js';
import { providerRuleFor, PROVIDER_RULES, type ProviderRule } from './provider-rules.js';
import type { ProbeTarget, SmtpProbeOptions } from './probe-types.js';
import { probeTargets } from './smtp-probe.js';
import { checkSyntax } from './syntax.js';
import { TRANSIENT_REASONS, VALIDITY_KIND, VALIDITY_REASONS, VALIDITY_STATUSES, VALIDITY_STEPS, type ValidityFlags, type ValidityResult, type ValidityStep } from './validity-result.js';
import { smtpVerdict, unprobedVerdict, type Verdict } from './verdict.js';

/** The SMTP step's options (probe-types.ts) less the parts the verifier makes itself when not given. */
export interface ValidityVerifierOptions extends Omit<SmtpProbeOptions, 'hostLimiter' | 'catchAll'> {
  clock: Clock;
  /** false: DNS-only mode (SLUICE_SMTP_PROBE=off), for clouds that block port 25. */
  probe: boolean;
  hostLimiter?: HostLimiter;
  /**
   * Sessions to one MX host at once: the LocalHostLimiter's limit when no hostLimiter is given, and
   * the sessions this process opens to one host (never more than the limiter's slots allow).
   */
  hostConcurrency?: number;
  catchAll?: CatchAllCache;
  rules?: readonly ProviderRule[];
  maxBatch?: number;
}

/**
 * A transient answer's outcome: never charged or cached. Not `retryable` for lookupBatch: trying
 * again within seconds does not get past a greylisting server (it wants minutes) and would hold the
 * worker for nothing; a bulk job defers the row to a later pass of its chunk instead
 * (Pipeline.deferFailures), and the single endpoint answers `unknown` with `retry_after`.
 */
export interface TransientFailure {
  ok: false;
  retryable: false;
  code: string;
  message: string;
  /** The answer as it stood, for the single endpoint to show with `retry_after`. */
  partial: ValidityResult;
}

/**
 * Email verification as an embedded lookup provider (issue 26): syntax, DNS, flags, SMTP, each
 * its own step with its own section of the answer. Addresses of one batch are grouped by domain
 * (one DNS answer, one catch-all probe) and by MX host (one SMTP session for every domain it serves).
 */
export class ValidityVerifier implements LookupProvider<ValidityResult> {
  readonly kind = VALIDITY_KIND;
  readonly name = 'embedded-validity';
  readonly maxBatch: number;
  private readonly hostLimiter: HostLimiter;
  private readonly catchAll: CatchAllCache;
  private readonly rules: readonly ProviderRule[];
  private readonly sessions: HostSessions;

  constructor(private readonly options: ValidityVerifierOptions) {
    this.maxBatch = options.maxBatch ?? 1_000;
    this.hostLimiter = options.hostLimiter ?? new LocalHostLimiter(options.hostConcurrency ?? 2);
    this.catchAll = options.catchAll ?? new CatchAllCache(options.clock);
    this.rules = options.rules ?? PROVIDER_RULES;
    this.sessions = new HostSessions(this.probeOptions, options.hostConcurrency ?? 2);
  }

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<ValidityResult>[]> {
    const outcomes = new Map<string, LookupOutcome<ValidityResult>>();
    const byDomain = new Map<string, Item[]>();
    for (const key of keys) {
      const syntax = checkSyntax(key);
      if (!syntax.ok) {
        outcomes.set(key, { ok: true, result: { ...blank(key), status: VALIDITY_STATUSES.invalid, reason: VALIDITY_REASONS.invalidSyntax, checked: [VALIDITY_STEPS.syntax] } });
        continue;
      }
      const list = byDomain.get(syntax.domain) ?? [];
      list.push({ key, local: syntax.local, address: syntax.address, canonical: syntax.canonical, flags: flagsOf(syntax.local, syntax.domain) });
      byDomain.set(syntax.domain, list);
    }
    const settle = (item: Item, checked: ValidityStep[], verdict: Verdict, extra: Partial<ValidityResult> = {}): void => {
      const result: ValidityResult = { ...blank(item.address), canonical: item.canonical, flags: item.flags, checked, ...extra, ...verdict };
      outcomes.set(item.key, TRANSIENT_REASONS.has(verdict.reason) ? transient(result) : { ok: true, result });
    };
    // DNS for every domain at once; what DNS settles never reaches SMTP.
    const targets: (ProbeTarget & { items: Item[] })[] = [];
    await Promise.all(
      [...byDomain].map(async ([domain, items]) => {
        const dnsOnly: ValidityStep[] = [VALIDITY_STEPS.syntax, VALIDITY_STEPS.dns];
        // Past the deadline nothing is asked: a new attempt after it would only connect to be cut off.
        if (signal?.aborted) return items.forEach((item) => settle(item, dnsOnly, { status: VALIDITY_STATUSES.unknown, reason: VALIDITY_REASONS.timeout }));
        const mx = await mxStep(this.options.resolver, domain, signal);
        if (mx.kind !== 'hosts') {
          const verdict = dnsVerdict(mx.kind);
          return items.forEach((item) => settle(item, dnsOnly, verdict));
        }
        const flagged: ValidityStep[] = [...dnsOnly, VALIDITY_STEPS.flags];
        // A disposable domain is not probed: its answer would change nothing, and its servers owe us nothing.
        if (!this.options.probe || items.every((item) => item.flags.disposable)) {
          return items.forEach((item) => settle(item, flagged, unprobedVerdict(item.flags), { mx: mx.hosts }));
        }
        targets.push({ domain, hosts: mx.hosts, addresses: items.map((i) => i.address), items });
      }),
    );
    if (targets.length > 0) {
      const probe = await probeTargets(this.probeOptions, this.sessions, targets, signal);
      for (const target of targets) {
        const catchAll = probe.catchAll.get(target.domain) ?? null;
        const checked: ValidityStep[] = [VALIDITY_STEPS.syntax, VALIDITY_STEPS.dns, VALIDITY_STEPS.flags, VALIDITY_STEPS.smtp];
        if (catchAll !== null) checked.push(VALIDITY_STEPS.catchAll);
        for (const item of target.items) {
          const answer = probe.addresses.get(item.address)!;
          const rule = answer.kind === 'answered' ? providerRuleFor(answer.evidence.host, this.rules) : undefined;
          settle(item, checked, smtpVerdict(answer, item.flags, catchAll, rule), { mx: [...target.hosts], smtp: answer.evidence, catch_all: catchAll });
        }
      }
    }
    return keys.map((k) => outcomes.get(k)!);
  }

  private get probeOptions(): SmtpProbeOptions {
    const o = this.options;
    return {
      resolver: o.resolver,
      hostLimiter: this.hostLimiter,
      catchAll: this.catchAll,
      port: o.port,
      helo: o.helo,
      mailFrom: o.mailFrom,
      timeoutMs: o.timeoutMs,
      allowPrivate: o.allowPrivate,
      blockedReason: o.blockedReason,
      ...(o.onSession ? { onSession: o.onSession } : {}),
      ...(o.pace ? { pace: o.pace } : {}),
      ...(o.randomLocal ? { randomLocal: o.randomLocal } : {}),
    };
  }
}

interface Item {
  key: string;
  local: string;
  address: string;
  canonical: string | null;
  flags: ValidityFlags;
}

function dnsVerdict(kind: 'nxdomain' | 'null_mx' | 'no_mx' | 'transient'): Verdict {
  switch (kind) {
    case 'nxdomain':
      return { status: VALIDITY_STATUSES.invalid, reason: VALIDITY_REASONS.invalidDomain };
    case 'null_mx':
      return { status: VALIDITY_STATUSES.invalid, reason: VALIDITY_REASONS.nullMx };
    case 'no_mx':
      return { status: VALIDITY_STATUSES.invalid, reason: VALIDITY_REASONS.noMx };
    case 'transient':
      return { status: VALIDITY_STATUSES.unknown, reason: VALIDITY_REASONS.dnsUnavailable };
  }
}

function blank(email: string): ValidityResult {
  return {
    email,
    status: VALIDITY_STATUSES.unknown,
    reason: VALIDITY_REASONS.probeDisabled,
    canonical: null,
    flags: { disposable: false, role_account: false, free_provider: false },
    mx: [],
    smtp: null,
    catch_all: null,
    checked: [],
  };
}

function transient(result: ValidityResult): TransientFailure {
  const evidence = result.smtp ? ` (${result.smtp.host}: ${result.smtp.code ?? '-'} ${result.smtp.text})` : '';
  return { ok: false, retryable: false, code: result.reason, message: `${result.email}: ${result.reason}${evidence}`.slice(0, 400), partial: result };
}
