import { createHash, randomUUID } from 'node:crypto';

/**
 * A charge's ledger id is a pure function of what is being paid for, so replaying a batch after a
 * crash produces the same id and the ledger's primary key refuses the second charge.
 */
export function chargeLedgerId(accountId: string, kind: string, key: string, jobId: string): string {
  const digest = createHash('sha256').update(`${accountId}\0${kind}\0${key}\0${jobId}`).digest('hex');
  return `chg_${digest.slice(0, 40)}`;
}

export function creditLedgerId(): string {
  return `crd_${randomUUID()}`;
}
