import type { SmtpReply } from './smtp-session.js';
import { VALIDITY_REASONS, type ValidityReason } from './validity-result.js';

/** Old servers that send no enhanced code say so in words; only these words count as "no such mailbox". */
const NOT_FOUND_TEXT = /(no such (user|mailbox|recipient)|user unknown|unknown (user|recipient|mailbox)|does not exist|doesn't exist|not found|invalid (recipient|mailbox|address)|recipient rejected|mailbox unavailable|unrouteable)/i;

export const RCPT_ANSWERS = { accepted: 'accepted', rejected: 'rejected', temporary: 'temporary', tooManyRecipients: 'too_many_recipients' } as const;

export type RcptAnswer =
  | { kind: 'accepted' }
  /** A final refusal, with what it says about the mailbox. */
  | { kind: 'rejected'; reason: ValidityReason }
  | { kind: 'temporary' }
  /** 452 / 4.5.3: this session has had enough recipients; a new one may go on. */
  | { kind: 'too_many_recipients' };

/**
 * What one RCPT TO reply says (RFC 5321 §4.2, RFC 3463). The enhanced code decides where there is
 * one: 5.1.x the address, 5.2.1 disabled, 5.2.2 full, 5.7.x a policy (our IP, our name, a rate), which
 * is no proof the mailbox is missing. Without one, 552 is full and 550/551/553 count as "not found"
 * only when the text says so: a bare 550 is as often a blocklist as a missing user.
 */
export function classifyRcpt(reply: SmtpReply): RcptAnswer {
  const { code, enhanced } = reply;
  if (code === 250 || code === 251) return { kind: 'accepted' };
  if (code === 452 || enhanced === '4.5.3' || enhanced === '5.5.3') return { kind: 'too_many_recipients' };
  if (code >= 400 && code < 500) return { kind: 'temporary' };
  if (enhanced !== null) {
    if (enhanced.startsWith('5.1.')) return { kind: 'rejected', reason: VALIDITY_REASONS.mailboxNotFound };
    if (enhanced === '5.2.1') return { kind: 'rejected', reason: VALIDITY_REASONS.mailboxDisabled };
    if (enhanced === '5.2.2') return { kind: 'rejected', reason: VALIDITY_REASONS.mailboxFull };
    if (enhanced.startsWith('5.7.')) return { kind: 'rejected', reason: VALIDITY_REASONS.policyBlock };
  }
  if (code === 552) return { kind: 'rejected', reason: VALIDITY_REASONS.mailboxFull };
  if ((code === 550 || code === 551 || code === 553) && NOT_FOUND_TEXT.test(reply.text)) return { kind: 'rejected', reason: VALIDITY_REASONS.mailboxNotFound };
  return { kind: 'rejected', reason: VALIDITY_REASONS.rejected };
}
