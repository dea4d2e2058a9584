import type { ProviderRule } from './provider-rules.js';
import type { AddressProbe } from './probe-types.js';
import { VALIDITY_REASONS, VALIDITY_STATUSES, type ValidityFlags, type ValidityReason, type ValidityStatus } from './validity-result.js';

export type Verdict = { status: ValidityStatus; reason: ValidityReason };

/**
 * From the SMTP answer and the flags to status and reason. What the mailbox server said about the
 * mailbox comes first (a disposable address that does not exist is invalid); an acceptance is
 * believed only when nothing says acceptances mean nothing here (provider rule, catch-all), and a
 * flag turns it risky. A transient answer is not a verdict: the caller defers it (see
 * TRANSIENT_REASONS).
 */
export function smtpVerdict(probe: AddressProbe, flags: ValidityFlags, catchAll: boolean | null, rule: ProviderRule | undefined): Verdict {
  if (probe.kind === 'unreachable') {
    if (probe.reason === 'blocked_address') return { status: VALIDITY_STATUSES.unknown, reason: VALIDITY_REASONS.blockedAddress };
    return { status: VALIDITY_STATUSES.unknown, reason: probe.reason === 'timeout' ? VALIDITY_REASONS.timeout : VALIDITY_REASONS.smtpUnavailable };
  }
  const { answer } = probe;
  switch (answer.kind) {
    case 'temporary':
    case 'too_many_recipients':
      return { status: VALIDITY_STATUSES.unknown, reason: VALIDITY_REASONS.greylisted };
    case 'rejected':
      switch (answer.reason) {
        case VALIDITY_REASONS.mailboxNotFound:
        case VALIDITY_REASONS.mailboxDisabled:
          return { status: VALIDITY_STATUSES.invalid, reason: answer.reason };
        case VALIDITY_REASONS.mailboxFull:
          return { status: VALIDITY_STATUSES.risky, reason: answer.reason };
        default:
          return { status: VALIDITY_STATUSES.unknown, reason: answer.reason };
      }
    case 'accepted':
      return acceptedVerdict(flags, catchAll, rule);
  }
}

function acceptedVerdict(flags: ValidityFlags, catchAll: boolean | null, rule: ProviderRule | undefined): Verdict {
  if (flags.disposable) return { status: VALIDITY_STATUSES.risky, reason: VALIDITY_REASONS.disposable };
  if (rule !== undefined) return { status: VALIDITY_STATUSES.risky, reason: VALIDITY_REASONS.providerAcceptsAll };
  if (catchAll === true) return { status: VALIDITY_STATUSES.risky, reason: VALIDITY_REASONS.catchAll };
  if (flags.role_account) return { status: VALIDITY_STATUSES.risky, reason: VALIDITY_REASONS.roleAccount };
  return { status: VALIDITY_STATUSES.valid, reason: VALIDITY_REASONS.accepted };
}

/** Without an SMTP answer (DNS-only mode, disposable domains): a flag that is certain, else unknown. */
export function unprobedVerdict(flags: ValidityFlags): Verdict {
  if (flags.disposable) return { status: VALIDITY_STATUSES.risky, reason: VALIDITY_REASONS.disposable };
  return { status: VALIDITY_STATUSES.unknown, reason: VALIDITY_REASONS.probeDisabled };
}
