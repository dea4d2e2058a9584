import { createHash, randomUUID } from 'node:crypto';

/**
 * A charge line's id is a pure function of the batch it pays for, so replaying a batch after a
 * crash produces the same id and the ledger's primary key refuses the second charge.
 */
export function chargeLedgerId(accountId: string, jobId: string, batchId: string): string {
  const digest = createHash('sha256').update(`${accountId}\0${jobId}\0${batchId}`).digest('hex');
  return `chg_${digest.slice(0, 40)}`;
}

export function creditLedgerId(): string {
  return `crd_${randomUUID()}`;
}
