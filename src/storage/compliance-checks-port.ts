/** A compliance check of one address for one account (issue 29): provisional until settled. */
export interface ComplianceCheck {
  id: number;
  createdAt: number;
  settledAt: number | null;
  /** The settled answer as stored; null while provisional. */
  answer: unknown;
}

export interface ComplianceChecksPort {
  /** The account's latest check of the address (by key hash) made at or after `since`. */
  latest(accountId: string, keyHash: string, since: number): Promise<ComplianceCheck | undefined>;
  /** A new provisional check; its id is the answer's `result_id`. */
  open(accountId: string, keyHash: string, now: number): Promise<number>;
  /** Records the settled answer; a check settles once (a later settle leaves the first). */
  settle(id: number, answer: unknown, now: number): Promise<void>;
}
