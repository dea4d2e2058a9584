/** A code-host leak scan as stored: its request, state, lease and (once finished) its result. */
export interface RepoScanRecord {
  id: string;
  accountId: string;
  url: string;
  type: number;
  /** The scan's config as the answer echoes it (JSON). */
  config: string;
  status: RepoScanStatus;
  errorCode: string | null;
  /** The finished result (JSON): masked previews and fingerprints, never a secret. */
  result: string | null;
  leaseEpoch: number;
  attempts: number;
  createdAt: number;
  updatedAt: number;
}

export const REPO_SCAN_STATUSES = { processing: 'processing', completed: 'completed', failed: 'failed' } as const;
export type RepoScanStatus = (typeof REPO_SCAN_STATUSES)[keyof typeof REPO_SCAN_STATUSES];

export interface RepoScanLease {
  owner: string;
  epoch: number;
}

export interface RepoScansPort {
  create(input: { id: string; accountId: string; url: string; type: number; config: string; now: number }): Promise<void>;
  /** The account's scan, or undefined (another account's scan is not found). A read. */
  get(accountId: string, id: string): Promise<RepoScanRecord | undefined>;
  /**
   * Takes the oldest processing scan whose lease is free or expired, with a new epoch; one claimer
   * wins each scan (SQLite: one writer; PostgreSQL: FOR UPDATE SKIP LOCKED).
   */
  claim(owner: string, now: number, leaseMs: number): Promise<{ scan: RepoScanRecord; lease: RepoScanLease } | undefined>;
  /** Extends the lease; false when it was lost (the epoch moved on). */
  renew(id: string, lease: RepoScanLease, now: number, leaseMs: number): Promise<boolean>;
  /** Ends the scan (completed or failed) with its result, fenced by the lease epoch; false when the lease was lost. */
  finish(id: string, lease: RepoScanLease, end: { status: 'completed' | 'failed'; errorCode: string | null; result: string | null }, now: number): Promise<boolean>;
}
