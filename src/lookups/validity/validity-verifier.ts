import type { Clock } from '../../shared/clock.js';
import type { DnsResolver } from '../dns/dns-resolver.js';
import type { LookupOutcome, LookupProvider } from '../lookup-provider.js';
import { CatchAllCache } from './catch-all-cache.js';
import { flagsOf } from './flags.js';
import { LocalHostLimiter, type HostLimiter } from './host-limiter.js';
import { mxStep } from './mx-step.js';
import { providerRuleFor, PROVIDER_RULES, type ProviderRule } from './provider-rules.js';
import { probeDomain } from './smtp-probe.js';
import { checkSyntax } from './syntax.js';
import { TRANSIENT_REASONS, VALIDITY_KIND, VALIDITY_REASONS, VALIDITY_STATUSES, VALIDITY_STEPS, type ValidityResult, type ValidityStep } from './validity-result.js';
import { smtpVerdict, unprobedVerdict, type Verdict } from './verdict.js';

export interface ValidityVerifierOptions {
  resolver: DnsResolver;
  clock: Clock;
  /** false: DNS-only mode (SLUICE_SMTP_PROBE=off), for clouds that block port 25. */
  probe: boolean;
  port: number;
  helo: string;
  mailFrom: string;
  timeoutMs: number;
  allowPrivate: boolean;
  /** Why an MX address may not be connected to (the webhook address policy), or undefined. */
  blockedReason: (ip: string) => string | undefined;
  hostLimiter?: HostLimiter;
  /** Sessions to one MX host at once when no hostLimiter is given. */
  hostConcurrency?: number;
  catchAll?: CatchAllCache;
  rules?: readonly ProviderRule[];
  maxBatch?: number;
  onSession?: () => void;
  randomLocal?: () => string;
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
 * its own step with its own section of the answer. Addresses of one batch are grouped by domain,
 * so that one DNS answer, one catch-all probe and one SMTP session serve all of a domain's addresses.
 */
export class ValidityVerifier implements LookupProvider<ValidityResult> {
  readonly kind = VALIDITY_KIND;
  readonly name = 'embedded-validity';
  readonly maxBatch: number;
  private readonly hostLimiter: HostLimiter;
  private readonly catchAll: CatchAllCache;
  private readonly rules: readonly ProviderRule[];

  constructor(private readonly options: ValidityVerifierOptions) {
    this.maxBatch = options.maxBatch ?? 1_000;
    this.hostLimiter = options.hostLimiter ?? new LocalHostLimiter(options.hostConcurrency ?? 2);
    this.catchAll = options.catchAll ?? new CatchAllCache(options.clock);
    this.rules = options.rules ?? PROVIDER_RULES;
  }

  async lookup(keys: readonly string[], signal?: AbortSignal): Promise<LookupOutcome<ValidityResult>[]> {
    const outcomes = new Map<string, LookupOutcome<ValidityResult>>();
    const byDomain = new Map<string, { key: string; local: string; address: string; canonical: string | null }[]>();
    for (const key of keys) {
      const syntax = checkSyntax(key);
      if (!syntax.ok) {
        outcomes.set(key, { ok: true, result: { ...blank(key), status: VALIDITY_STATUSES.invalid, reason: VALIDITY_REASONS.invalidSyntax, checked: [VALIDITY_STEPS.syntax] } });
        continue;
      }
      const list = byDomain.get(syntax.domain) ?? [];
      list.push({ key, local: syntax.local, address: syntax.address, canonical: syntax.canonical });
      byDomain.set(syntax.domain, list);
    }
    await Promise.all(
      [...byDomain].map(async ([domain, items]) => {
        for (const [key, outcome] of await this.verifyDomain(domain, items, signal)) outcomes.set(key, outcome);
      }),
    );
    return keys.map((k) => outcomes.get(k)!);
  }

  private async verifyDomain(
    domain: string,
    items: readonly { key: string; local: string; address: string; canonical: string | null }[],
    signal?: AbortSignal,
  ): Promise<Map<string, LookupOutcome<ValidityResult>>> {
    const out = new Map<string, LookupOutcome<ValidityResult>>();
    const checked: ValidityStep[] = [VALIDITY_STEPS.syntax, VALIDITY_STEPS.dns];
    // Past the deadline nothing is asked: a new attempt after it would only connect to be cut off.
    const mx = signal?.aborted ? ({ kind: 'aborted' } as const) : await mxStep(this.options.resolver, domain, signal);
    const base = (item: (typeof items)[number]): ValidityResult => ({ ...blank(item.address), canonical: item.canonical, flags: flagsOf(item.local, domain), checked: [...checked] });
    const settle = (item: (typeof items)[number], verdict: Verdict, extra: Partial<ValidityResult> = {}): void => {
      const result: ValidityResult = { ...base(item), ...extra, ...verdict };
      out.set(item.key, TRANSIENT_REASONS.has(verdict.reason) ? transient(result) : { ok: true, result });
    };
    if (mx.kind === 'aborted') {
      for (const item of items) settle(item, { status: VALIDITY_STATUSES.unknown, reason: VALIDITY_REASONS.timeout });
      return out;
    }
    if (mx.kind !== 'hosts') {
      const reason =
        mx.kind === 'nxdomain' ? VALIDITY_REASONS.invalidDomain : mx.kind === 'null_mx' ? VALIDITY_REASONS.nullMx : mx.kind === 'no_mx' ? VALIDITY_REASONS.noMx : VALIDITY_REASONS.dnsUnavailable;
      const status = mx.kind === 'transient' ? VALIDITY_STATUSES.unknown : VALIDITY_STATUSES.invalid;
      for (const item of items) settle(item, { status, reason });
      return out;
    }
    checked.push(VALIDITY_STEPS.flags);
    const flags = new Map(items.map((item) => [item.key, flagsOf(item.local, domain)]));
    const disposableDomain = items.every((item) => flags.get(item.key)!.disposable);
    // A disposable domain is not probed: its answer would change nothing, and its servers owe us nothing.
    if (!this.options.probe || disposableDomain) {
      for (const item of items) settle(item, unprobedVerdict(flags.get(item.key)!), { mx: mx.hosts });
      return out;
    }
    checked.push(VALIDITY_STEPS.smtp);
    const probe = await probeDomain(
      {
        resolver: this.options.resolver,
        hostLimiter: this.hostLimiter,
        catchAll: this.catchAll,
        port: this.options.port,
        helo: this.options.helo,
        mailFrom: this.options.mailFrom,
        timeoutMs: this.options.timeoutMs,
        allowPrivate: this.options.allowPrivate,
        blockedReason: this.options.blockedReason,
        ...(this.options.onSession ? { onSession: this.options.onSession } : {}),
        ...(this.options.randomLocal ? { randomLocal: this.options.randomLocal } : {}),
      },
      domain,
      mx.hosts,
      items.map((i) => i.address),
      signal,
    );
    if (probe.catchAll !== null) checked.push(VALIDITY_STEPS.catchAll);
    for (const item of items) {
      const answer = probe.addresses.get(item.address)!;
      const rule = answer.kind === 'answered' ? providerRuleFor(answer.evidence.host, this.rules) : undefined;
      settle(item, smtpVerdict(answer, flags.get(item.key)!, probe.catchAll, rule), {
        mx: mx.hosts,
        smtp: answer.evidence,
        catch_all: probe.catchAll,
      });
    }
    return out;
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
