import { createHash } from 'node:crypto';
import { isIPv6 } from 'node:net';
import type { SharedRecords } from '../shared/shared-records.js';

/**
 * Failed logins per email and per source address, counted in the store's shared records so that
 * every API process sees one count: without it, 200 wrong passwords in 10 s met no refusal and the
 * right one still worked afterwards.
 *
 * An attempt is counted as a failure when it begins, before any hash, and a success takes it back:
 * counting only after the hash would let a burst of parallel guesses all pass the check while the
 * first of them is still hashing. The same rules apply whether or not the email has an account,
 * so a refusal never tells which emails exist.
 */
export interface ThrottlePolicy {
  /** Failures in a row that start the lockouts; the attempt after them is refused. */
  readonly failures: number;
  /** The first lockout; each failure after it doubles the next one. */
  readonly baseLockMs: number;
  readonly maxLockMs: number;
  /** A quiet time (no failure, no lockout) after which the count starts again from zero. */
  readonly forgetMs: number;
}

export const EMAIL_POLICY: ThrottlePolicy = { failures: 5, baseLockMs: 60_000, maxLockMs: 15 * 60_000, forgetMs: 15 * 60_000 };
/** Wider than the email's: many people may share one address (an office, a carrier's NAT). */
export const ADDRESS_POLICY: ThrottlePolicy = { failures: 20, baseLockMs: 60_000, maxLockMs: 15 * 60_000, forgetMs: 15 * 60_000 };

/**
 * An IPv6 /48 (one site's allocation, 65,536 /64s) as a whole: rotating through its /64s gave an
 * attacker a fresh per-/64 budget each time (issue 27, finding 6). Wider than one address's, as a
 * site holds many people.
 */
export const NETWORK_POLICY: ThrottlePolicy = { failures: 100, baseLockMs: 60_000, maxLockMs: 15 * 60_000, forgetMs: 15 * 60_000 };

export type LoginVerdict =
  | { allowed: true; attempt: LoginAttempt }
  | { allowed: false; /** Whole seconds until the lockout that refused it (address or email) ends. */ retryAfter: number };

export interface LoginAttempt {
  readonly emailRecord: string;
  readonly addressRecord: string;
  /** The IPv6 /48 the address is in; absent for IPv4. */
  readonly networkRecord?: string;
}

/** f: failures counted (attempts in flight included); last: the latest one; until: locked before this. */
interface Count {
  f: number;
  last: number;
  until: number;
}

export class LoginThrottle {
  constructor(
    private readonly records: SharedRecords,
    private readonly emailPolicy: ThrottlePolicy = EMAIL_POLICY,
    private readonly addressPolicy: ThrottlePolicy = ADDRESS_POLICY,
    private readonly networkPolicy: ThrottlePolicy = NETWORK_POLICY,
  ) {}

  /**
   * Refuses while the email or the address is locked out; otherwise counts the attempt on both.
   * The address is checked first, so that a refused address never creates a record per email it
   * sprays.
   */
  async begin(email: string, address: string, now: number): Promise<LoginVerdict> {
    const network = networkKey(address);
    const attempt: LoginAttempt = {
      emailRecord: `login:email:${digest(email.trim().toLowerCase())}`,
      addressRecord: `login:addr:${addressKey(address)}`,
      ...(network ? { networkRecord: `login:net:${network}` } : {}),
    };
    const { networkRecord } = attempt;
    if (networkRecord) {
      const byNetwork = await this.records.updateShared(networkRecord, (v) => begin(v, this.networkPolicy, now));
      if (byNetwork > 0) return { allowed: false, retryAfter: byNetwork };
    }
    const byAddress = await this.records.updateShared(attempt.addressRecord, (v) => begin(v, this.addressPolicy, now));
    if (byAddress > 0) {
      if (networkRecord) await this.records.updateShared(networkRecord, (v) => refund(v, this.networkPolicy, now));
      return { allowed: false, retryAfter: byAddress };
    }
    const byEmail = await this.records.updateShared(attempt.emailRecord, (v) => begin(v, this.emailPolicy, now));
    if (byEmail > 0) {
      // The address was charged for an attempt that never ran: give it back.
      await this.records.updateShared(attempt.addressRecord, (v) => refund(v, this.addressPolicy, now));
      if (networkRecord) await this.records.updateShared(networkRecord, (v) => refund(v, this.networkPolicy, now));
      return { allowed: false, retryAfter: byEmail };
    }
    return { allowed: true, attempt };
  }

  /** The right password: the email starts afresh, and the address is not charged for it. */
  async succeeded(attempt: LoginAttempt, now: number): Promise<void> {
    await this.records.updateShared(attempt.emailRecord, () => ({ value: undefined, result: undefined }));
    await this.records.updateShared(attempt.addressRecord, (v) => refund(v, this.addressPolicy, now));
    if (attempt.networkRecord) await this.records.updateShared(attempt.networkRecord, (v) => refund(v, this.networkPolicy, now));
  }

  /** No hash ran (the process was too busy): the attempt counts against neither. */
  async withdrawn(attempt: LoginAttempt, now: number): Promise<void> {
    await this.records.updateShared(attempt.emailRecord, (v) => refund(v, this.emailPolicy, now));
    await this.records.updateShared(attempt.addressRecord, (v) => refund(v, this.addressPolicy, now));
    if (attempt.networkRecord) await this.records.updateShared(attempt.networkRecord, (v) => refund(v, this.networkPolicy, now));
  }
}

/** The change for one attempt: seconds to wait when locked (nothing counted), else 0 and counted. */
function begin(stored: string | undefined, policy: ThrottlePolicy, now: number): { value: string | undefined; result: number } {
  const count = current(stored, policy, now);
  if (count.until > now) return { value: stored, result: Math.max(1, Math.ceil((count.until - now) / 1000)) };
  count.f += 1;
  count.last = now;
  if (count.f >= policy.failures) count.until = now + lockMs(count.f, policy);
  return { value: JSON.stringify(count), result: 0 };
}

/** Takes back one counted attempt; once below the threshold again, no lockout stands. */
function refund(stored: string | undefined, policy: ThrottlePolicy, now: number): { value: string | undefined; result: undefined } {
  const count = current(stored, policy, now);
  count.f = Math.max(0, count.f - 1);
  if (count.f < policy.failures) count.until = 0;
  return { value: count.f === 0 && count.until <= now ? undefined : JSON.stringify(count), result: undefined };
}

/** The stored count, or zero once it has been quiet for `forgetMs` after its last failure and lockout. */
function current(stored: string | undefined, policy: ThrottlePolicy, now: number): Count {
  if (stored === undefined) return { f: 0, last: 0, until: 0 };
  const count = JSON.parse(stored) as Count;
  return Math.max(count.last, count.until) + policy.forgetMs <= now ? { f: 0, last: 0, until: 0 } : count;
}

/** 1, 2, 4, 8 ... minutes (with the default policies) for the failures-th failure and on, capped. */
export function lockMs(failures: number, policy: ThrottlePolicy): number {
  const doublings = Math.min(failures - policy.failures, 30);
  return Math.min(policy.maxLockMs, policy.baseLockMs * 2 ** doublings);
}

/** Records hold a digest, not the address typed: the store keeps no list of emails tried. */
function digest(text: string): string {
  return createHash('sha256').update(text).digest('base64url').slice(0, 32);
}

/**
 * An IPv6 client is counted by its /64, which one subscriber usually holds whole: counting each
 * address alone would give a single attacker 2^64 fresh budgets.
 */
export function addressKey(address: string): string {
  const groups = ipv6Groups(address);
  return groups ? `${groups.slice(0, 4).join(':')}::/64` : plainAddress(address);
}

/** The /48 an IPv6 address is in, counted as well as its /64; undefined for IPv4. */
export function networkKey(address: string): string | undefined {
  const groups = ipv6Groups(address);
  return groups ? `${groups.slice(0, 3).join(':')}::/48` : undefined;
}

function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

/** The eight groups of an IPv6 address, without leading zeros; undefined for IPv4. */
function ipv6Groups(address: string): string[] | undefined {
  const plain = plainAddress(address);
  if (!isIPv6(plain)) return undefined;
  const [head = '', tail = ''] = plain.split('::');
  const left = head === '' ? [] : head.split(':');
  const right = tail === '' ? [] : tail.split(':');
  const groups = plain.includes('::') ? [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right] : left;
  return groups.map((g) => parseInt(g, 16).toString(16));
}
