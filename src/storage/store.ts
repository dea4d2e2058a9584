import type { SharedRecords } from '../shared/shared-records.js';
import type { IpNetworkPort } from './ip-network-records.js';
import type { ComplianceChecksPort } from './compliance-checks-port.js';
import type { JobStatus } from './job-states.js';
import type { BatchOutput, ChunkRecord, JobOptions, JobRecord, Lease, PhoneCountryCounts, RowCounters, StoredOutput } from './job-records.js';
import type {
  MonitorChanges,
  MonitorRecord,
  MonitorRunRecord,
  MonitoringTarget,
  MonitorStatus,
  MonitorTarget,
  MonitorType,
  NewMonitor,
  Page,
  TargetListRecord,
} from './monitor-records.js';
import type { DueMonitorEvent, MonitorEventFire } from './workflow-records.js';
import type { DueSchedule, ScheduleFire, ScheduleFireResult, StepCommit, StepCommitResult, WorkflowLogRecord, WorkflowRecord, WorkflowRunClaim, WorkflowRunRecord, WorkflowWrite } from './workflow-records.js';
import type { ComparisonCommit, RunClaim, RunEnd, StoredSnapshot, TargetCursor } from './monitor-run-records.js';
import type { MonitoringResultsFilter, MonitoringSnapshot, ResultsFilter, SnapshotRecord, TypedRunRecord } from './monitor-result-records.js';
import type { RepoScansPort } from './repo-scan-records.js';
import type { QuotaUsagePort } from './quota-usage.js';
import type { CreditAlertsPort } from './credit-alerts.js';
import type { UsagePort } from './usage-records.js';
import type { WorkflowSecretsPort } from './workflow-secret-records.js';
import type {
  Account,
  ApiKeyRow,
  NewApiKeyRow,
  AttemptRecord,
  BreachRecord,
  BreachRow,
  CompanyRecord,
  CompanyRow,
  CompanyWrite,
  Delivery,
  EmailBreachRecord,
  EmailBreachRow,
  IdempotencyClaim,
  LedgerEntry,
  NewWebhookRow,
  OutboxEvent,
  WebhookRow,
} from './records.js';

/**
 * The one port to Sluice's database. Every method is one atomic operation: what must happen
 * together (a checkpoint's rows, charges, cache writes and cursor; a state change, its released
 * reservations and its outbox event) is one call, and the adapter decides how it is atomic. No
 * driver, connection or transaction type crosses this line.
 *
 * Isolation, per operation, is written beside it. "Atomic" means all of its writes commit or none
 * do. "Serialised" means it behaves as if no other write of the store ran during it: SQLite gets
 * that from its single writer (`BEGIN IMMEDIATE`); PostgreSQL from row locks taken at the start
 * (`SELECT ... FOR UPDATE`, conditional `UPDATE`s whose `WHERE` re-checks the state) at READ
 * COMMITTED, with serialization failures and deadlocks retried. A "fenced" write carries the
 * lease epoch (and where it matters the cursor) in its `WHERE`, so a worker that lost its lease
 * changes nothing, whatever the isolation.
 */
export interface Store {
  /** Which adapter this is: `sqlite` or `postgres`. */
  readonly kind: StoreKind;
  readonly jobs: JobsPort;
  readonly billing: BillingPort;
  readonly results: ResultCachePort;
  readonly keys: KeysPort;
  readonly sessions: SessionsPort;
  readonly idempotency: IdempotencyPort;
  readonly webhooks: WebhooksPort;
  readonly deliveries: DeliveriesPort;
  readonly breaches: BreachesPort;
  readonly emailBreaches: EmailBreachesPort;
  readonly companies: CompaniesPort;
  readonly limits: LimitsPort;
  readonly audit: AuditPort;
  /** Issue 27, item 9: each request made with an API key, its credits and response time. */
  readonly usage: UsagePort;
  readonly retention: RetentionPort;
  readonly monitors: MonitorsPort;
  readonly monitorRuns: MonitorRunsPort;
  readonly monitorResults: MonitorResultsPort;
  /** Code-host leak scans (spec 4.6). */
  readonly repoScans: RepoScansPort;
  readonly ipNetwork: IpNetworkPort;
  readonly complianceChecks: ComplianceChecksPort;
  readonly workflows: WorkflowsPort;
  /** What each account holds, for its quotas (issue 27). */
  readonly quotaUsage: QuotaUsagePort;
  /** The credit alert each account may set, and the sweep that announces crossings (issue 27). */
  readonly creditAlerts: CreditAlertsPort;
  /** Named secrets webhook steps send by reference, stored sealed (issue 34). */
  readonly workflowSecrets: WorkflowSecretsPort;
  /** Resolves when the database answers: what `/readyz` reports. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export const STORE_KINDS = { sqlite: 'sqlite', postgres: 'postgres' } as const;
export type StoreKind = (typeof STORE_KINDS)[keyof typeof STORE_KINDS];

/** What the store needs from the layers above it, passed in by the composition root. */
export interface StoreHooks {
  /** `bulk.completed` for a job that has just reached a terminal state, as stored after the change. */
  jobEnded(job: JobRecord, now: number): OutboxEvent;
  /**
   * `bulk.paused` for a job that has just paused, as stored after the change; written only when an
   * active webhook of the account subscribes to it. Absent: pauses are not announced.
   */
  jobPaused?(job: JobRecord, now: number): OutboxEvent;
}

export interface NewJob {
  id: string;
  accountId: string;
  type: string;
  inputKey: string;
  inputName: string | null;
  options: JobOptions;
  now: number;
  /** The input file's size, for the stored-bytes quota; unset: 0. */
  inputBytes?: number;
}

export interface SplitResult {
  header: string[];
  keyColumn: number;
  totalRows: number;
  chunks: { firstRow: number; rowCount: number }[];
  /** Per-country counts of the phone numbers read; absent or null when the job read none. */
  countries?: PhoneCountryCounts | null;
}

export interface TransitionInput {
  reason?: string | null;
  message?: string | null;
  now: number;
}

/**
 * One checkpoint: everything a batch of rows changes. `rows` may be 0 (nothing answered that the
 * balance could pay for): the reservation is still released and a pause still recorded.
 */
export interface BatchCommit {
  jobId: string;
  accountId: string;
  chunkIndex: number;
  lease: Lease;
  /** The chunk cursor the batch started from; the commit is refused if it moved. */
  cursor: number;
  /** Rows committed, from `cursor` on. */
  rows: number;
  output: BatchOutput;
  counters: RowCounters;
  /** What the batch pays for: one credit per key, by kind (index into `kinds`). */
  charges: {
    kinds: readonly string[];
    keys: readonly (readonly string[])[];
    /** Unique within the job; the ledger line ids are derived from it, so a replay collides. */
    batchId: string;
    /** Keys billed after this are repeats, and must not be in `keys`. */
    since: number;
  };
  /** Answers for the shared result cache. */
  cache: readonly { kind: string; key: string; result: unknown }[];
  /** Set when the batch added error rows: past the budget the job fails with this message. */
  errorBudget?: { maxErrorRate: number; message: string };
  /**
   * The balance ran out before the batch's last row: the job pauses with insufficient_credits,
   * unless other chunks of the account that a worker has in work (a live lease) still hold
   * reservations, which may come back unspent; then `paused` is false and the caller tries the rest
   * again after a moment.
   */
  outOfCredits: boolean;
  now: number;
}

export type BatchCommitResult =
  | { ok: true; paused: boolean; failed: boolean }
  /**
   * Nothing was written: some keys were billed meanwhile (by another chunk or job) or the balance
   * cannot cover the charges. The caller plans again with what is true now. `balance` is what this
   * chunk may spend: the balance less every other chunk's reservation, so that a batch of a job
   * that paused meanwhile (losing its own reservation) never spends credits another job holds.
   */
  | { ok: false; billed: Set<string>[]; balance: number };

export type LookupCharge =
  /** Repeat-free: free when the account paid for the key after `since`, else 1 credit. */
  | { type: 'repeat_free'; key: string; since: number; batchId: string }
  /** A price per call, outside the window; 0 charges nothing. */
  | { type: 'flat'; amount: number; callId: string };

export interface LookupCommit {
  accountId: string;
  kind: string;
  charge: LookupCharge;
  cache: readonly { kind: string; key: string; result: unknown }[];
  /** Written to the outbox only when an active webhook of the account subscribes to its event. */
  event?: (credits: number) => OutboxEvent;
  now: number;
}

/**
 * What a claim took. `previousOwner` is the owner a lease was still recorded for when the claim
 * took it: that lease ran out without being released (a worker died, froze or stopped renewing; a
 * retry after a failure's backoff; possibly the claimer itself). It is read in the claim's own
 * transaction, with the row locked, so two claimers cannot both report one takeover. Absent when
 * the work was free (never leased, released, or freed by `freeLeasesOf`).
 */
export interface JobPhaseClaim {
  job: JobRecord;
  lease: Lease;
  previousOwner?: string;
}

/** As JobPhaseClaim, for a chunk. */
export interface ChunkClaim {
  chunk: ChunkRecord;
  lease: Lease;
  previousOwner?: string;
}

export interface JobsPort {
  /** A queued job in its split phase. Atomic (one insert). */
  create(input: NewJob): Promise<JobRecord>;
  /**
   * A running job comes with `work`: its leases and its pending chunks' leases, run out or not, read
   * in the same query (as for every job of `list`), so telling stalled jobs costs no query per job.
   */
  get(id: string): Promise<JobRecord | undefined>;
  /** As `get`, or `job_not_found` (404). */
  require(id: string): Promise<JobRecord>;
  status(id: string): Promise<JobStatus | undefined>;
  list(filter: { accountId?: string; status?: JobStatus; limit: number; offset: number }): Promise<{ jobs: JobRecord[]; total: number }>;
  chunks(jobId: string): Promise<ChunkRecord[]>;
  chunk(jobId: string, chunkIndex: number): Promise<ChunkRecord | undefined>;

  /**
   * Leases the oldest job that needs splitting (at most `maxRunningPerAccount` running per account)
   * or assembling, whose lease is free: epoch + 1. Serialised: two claimers never take one job.
   */
  acquireJobPhase(owner: string, now: number, leaseMs: number, maxRunningPerAccount?: number): Promise<JobPhaseClaim | undefined>;
  /** Fenced by epoch and owner; false when the lease is lost. */
  renewJobLease(jobId: string, lease: Lease, expiresAt: number): Promise<boolean>;
  /** Fenced by epoch. */
  releaseJobLease(jobId: string, lease: Lease): Promise<void>;
  /**
   * Leases the next pending chunk of a running job, the accounts with the fewest chunks in work
   * first (fair share). Serialised like `acquireJobPhase`.
   */
  acquireChunk(owner: string, now: number, leaseMs: number): Promise<ChunkClaim | undefined>;
  renewChunkLease(jobId: string, chunkIndex: number, lease: Lease, expiresAt: number): Promise<boolean>;
  releaseChunkLease(jobId: string, chunkIndex: number, lease: Lease): Promise<void>;
  /**
   * Whether another account has free work waiting while none of it is in work. A read; a stale
   * answer only hands a slot over one batch early or late.
   */
  otherAccountStarved(accountId: string, now: number, maxRunningPerAccount?: number): Promise<boolean>;
  /**
   * Counts a retryable failure of leased work and keeps the lease until `retryAt`. Fenced; returns
   * the failures in a row (0 when the lease was lost).
   */
  recordFailure(target: { jobId: string; chunkIndex?: number }, lease: Lease, retryAt: number): Promise<number>;
  /** A phase finished: its earlier failures no longer count. */
  clearPhaseFailures(jobId: string): Promise<void>;
  /** Owners of leases that have not run out. A read. */
  liveLeaseOwners(now: number): Promise<string[]>;
  /** Frees every lease of `owner`, keeping epochs so its late commits stay fenced. Atomic. */
  freeLeasesOf(owner: string): Promise<number>;

  /** The chunks and the move to processing, fenced by the split's lease. Atomic. */
  finishSplit(jobId: string, lease: Lease, split: SplitResult, now: number): Promise<void>;
  /**
   * One checkpoint (see BatchCommit), fenced by epoch, owner and cursor (`lease_lost` otherwise,
   * with nothing written). A job paused or cancelled meanwhile takes nothing of the batch but its
   * released reservation (`paused: true`): its counters and charges stop where the pause found them. Serialised against other charges of the account: the balance check, the
   * repeat-free check and the debit see no concurrent change, so two jobs racing for one key charge
   * it once and the balance never goes below 0.
   */
  commitBatch(input: BatchCommit): Promise<BatchCommitResult>;
  /** The chunk's committed outputs in row order, one batch at a time. */
  outputs(jobId: string, chunkIndex: number): AsyncIterable<StoredOutput>;
  /**
   * Marks a fully committed chunk done (fenced), drops its outputs, keeps its row flags when some
   * row failed; starts its retry pass if one was asked for, else moves the job to assembly after its
   * last chunk. Serialised, so two chunks finishing together move the job on once.
   * `retryAt`: the chunk's failed rows failed for the moment (greylisting): a pass over them starts
   * at once but no worker may claim it before this time (its free lease runs until then), so no
   * worker waits for it and the job's other chunks go on.
   */
  completeChunk(jobId: string, chunkIndex: number, lease: Lease, rowFlags: Buffer | null, now: number, retryAt?: number): Promise<void>;
  /**
   * The provider is down: the chunk's reservation is released and, if the job still runs, it
   * pauses with provider_unavailable and its reservations go. Atomic.
   */
  pauseForProvider(jobId: string, chunkIndex: number, message: string, now: number): Promise<void>;
  /** Completes the job (fenced by the assembly's lease) and queues its end event. Atomic. */
  complete(jobId: string, lease: Lease, keys: { allKey: string; foundKey: string; errorsKey: string }, now: number): Promise<void>;
  /**
   * Moves a job if the move is allowed from the status read in the same operation (serialised on
   * the job's row). Leaving `running` releases the job's reservations; a terminal status queues its
   * end event. `invalid_state` (409) when not allowed.
   */
  transition(jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord>;
  /** As `transition`, only from `from`; undefined (nothing changed) when the job is elsewhere. */
  transitionFrom(from: JobStatus, jobId: string, to: JobStatus, input: TransitionInput): Promise<JobRecord | undefined>;
  /** A paused or failed job runs again with clean failure counts. Serialised on the job's row. */
  resume(jobId: string, now: number): Promise<JobRecord>;
  /** A finished job's failed rows go back to work; returns how many. Serialised on the job's row. */
  retryFailed(jobId: string, now: number): Promise<number>;
  /** Jobs paused for `reason` since at least `before`. A read. */
  pausedSince(reason: string, before: number): Promise<string[]>;
}

export interface BillingPort {
  /** `account_exists` (409) for a taken id or email. Atomic, with the opening grant. */
  createAccount(input: { id?: string; email?: string | null; passwordHash?: string | null; credits: number; now: number }): Promise<Account>;
  account(id: string): Promise<Account | undefined>;
  /** As `account`, or `account_not_found` (404). */
  requireAccount(id: string): Promise<Account>;
  /** For login: the account with this email (any case) and its password hash. */
  credentials(email: string): Promise<{ id: string; passwordHash: string | null; status: string } | undefined>;
  /** A suspension also ends every session of the account, in the same atomic operation. */
  setStatus(accountId: string, status: Account['status']): Promise<Account>;
  setRateLimit(accountId: string, perMinute: number | null): Promise<Account>;
  accounts(): Promise<Account[]>;
  /** Grants and top-ups: one ledger line and the balance change. Atomic. */
  addCredits(accountId: string, amount: number, reason: 'grant' | 'topup', now: number): Promise<Account>;
  ledger(accountId: string): Promise<LedgerEntry[]>;
  /** Credits charged by a job, from its ledger lines. */
  chargeCountForJob(jobId: string): Promise<number>;
  /**
   * The keys a job paid for (those whose last charge was the job's), by the names the billing cache
   * keeps instead of keys (`keyName`: the cache holds no plain key), sorted.
   */
  chargedKeys(accountId: string, jobId: string): Promise<string[]>;
  /** The billing cache's name for a key of a kind (hex of its keyed hash); a pure function of this deployment's seal key. */
  keyName(kind: string, key: string): string;
  /** Keys this account paid for after `since`. A read; `commitBatch` checks again. */
  freshlyBilled(accountId: string, kind: string, keys: readonly string[], since: number): Promise<Set<string>>;
  /**
   * Sets the chunk's reservation to as much of `wanted` as the balance covers beside every other
   * reservation of the account, and returns it. Serialised against the account's other reservations
   * and against the job's transitions: a job that is not running gets 0 and keeps no reservation.
   */
  reserve(accountId: string, jobId: string, chunkIndex: number, wanted: number): Promise<number>;
  /** Balance not set aside by running chunks. A read. */
  available(accountId: string): Promise<number>;
  /**
   * The balance and what the account's chunks hold of it, in one read (so that available =
   * credits - reserved exactly); `account_not_found` (404).
   */
  balance(accountId: string): Promise<{ credits: number; reserved: number }>;
  /**
   * One single lookup's charge, its cache writes and its event. Serialised like `commitBatch`.
   * `ok: false` (nothing written) when the balance less running chunks' reservations cannot pay.
   */
  commitLookup(input: LookupCommit): Promise<{ ok: true; credits: number } | { ok: false }>;
}

export interface ResultCachePort {
  /** Answers looked up after `since`. A read. */
  getMany<R>(kind: string, keys: readonly string[], since: number): Promise<Map<string, R>>;
  put(kind: string, key: string, result: unknown, now: number): Promise<void>;
}

export interface KeysPort {
  /** With `event`, the key and its outbox event (written only when a webhook subscribes to it) commit together. */
  insert(row: NewApiKeyRow): Promise<void>;
  /**
   * A roll, in one transaction: inserts `next` (and its event) and ends `oldId` at `oldEndsAt`
   * (or its own earlier end), marking it replaced by `next`. Only a key that is not revoked, not
   * past its end at `next.now` and not rolled already is rolled; false (and nothing written) else.
   */
  roll(oldId: string, oldEndsAt: number, next: NewApiKeyRow): Promise<boolean>;
  /** Revokes every key whose end is at or before `now` (so it no longer counts against the key quota); returns how many. */
  revokeExpired(now: number): Promise<number>;
  /** With the owning account's status, in one read. */
  byHash(keyHash: string): Promise<(ApiKeyRow & { accountStatus: string | null }) | undefined>;
  byId(id: string): Promise<ApiKeyRow | undefined>;
  list(accountId: string): Promise<ApiKeyRow[]>;
  /** False for a revoked or unknown key. */
  setActive(id: string, active: boolean): Promise<boolean>;
  revoke(id: string, now: number): Promise<boolean>;
  /** Drops the sealed copy once the reveal window is over. */
  forgetSealed(id: string): Promise<void>;
  /**
   * Drops every sealed copy whose reveal window ended before `now`, asked for or not, so a copy of
   * the database taken later holds no recoverable key. One statement; returns how many it dropped.
   */
  forgetExpiredSeals(now: number): Promise<number>;
}

export interface SessionsPort {
  /**
   * Also purges expired sessions. Writes nothing and returns false unless the account is active,
   * serialised against `billing.setStatus` on the account's row: a login racing a suspension never
   * leaves a session behind it.
   */
  create(tokenHash: string, accountId: string, expiresAt: number, now: number): Promise<boolean>;
  get(tokenHash: string): Promise<{ accountId: string; expiresAt: number } | undefined>;
  /** The session's account when the session has not expired at `now` and the account is active. One read. */
  live(tokenHash: string, now: number): Promise<string | undefined>;
  /** Ends one session (logout); its account, or undefined when there was none. */
  end(tokenHash: string): Promise<string | undefined>;
}

export interface IdempotencyPort {
  /**
   * Claims (account, key) for one request. A claim older than `staleMs` with no job is taken over;
   * keys older than `keepMs` are forgotten. Serialised: two requests never both get `new`.
   */
  claim(accountId: string, key: string, now: number, staleMs: number, keepMs: number): Promise<IdempotencyClaim>;
  finish(accountId: string, key: string, fingerprint: string, jobId: string): Promise<void>;
  release(accountId: string, key: string): Promise<void>;
}

export interface WebhooksPort {
  /**
   * With `maxPerAccount`, `too_many_webhooks` (409) when the account already has that many webhooks
   * (paused ones count, deleted ones do not). Serialised per account: the count and the insert are
   * one transaction under a per-account lock, so two creates racing for the last place never both pass.
   */
  insert(row: NewWebhookRow, maxPerAccount?: number): Promise<void>;
  /** Not deleted. */
  get(id: string): Promise<WebhookRow | undefined>;
  list(accountId: string, limit: number, offset: number): Promise<{ webhooks: WebhookRow[]; total: number }>;
  /** Active, not deleted. */
  active(accountId: string): Promise<WebhookRow[]>;
  update(id: string, row: { url: string; events: string[]; description: string; isActive: boolean }, now: number): Promise<boolean>;
  /** Soft delete; false when already gone. */
  remove(id: string, now: number): Promise<boolean>;
  sealedSecrets(id: string): Promise<SealedWebhookSecrets | undefined>;
  /**
   * Replaces the signing secret of a webhook not deleted, keeping the one before (`previous`, or
   * null for none) until `previousUntil`. One statement, conditional on the sealed secret still
   * being `expected`: of two rotations racing, one wins and the other gets false, as when the
   * webhook is gone.
   */
  rotateSecret(id: string, expected: string | null, sealed: string, previous: string | null, previousUntil: number | null, now: number): Promise<boolean>;
}

/** A webhook's sealed secrets: the signing secret, the bot token, and the secret before the last rotation with the end of its overlap. */
export interface SealedWebhookSecrets {
  secret: string | null;
  token: string | null;
  previous?: string | null;
  previousUntil?: number | null;
}

export interface DeliveriesPort {
  /**
   * Turns unsent outbox events into one pending delivery per active webhook subscribed now, and
   * marks them sent. Atomic and serialised: no event is relayed twice or lost.
   *
   * With `maxPendingPerAccount`, an account that already has that many pending deliveries (of
   * webhooks not deleted) gets the rest of an event's deliveries recorded as `failed` with
   * `backlog_full` and no attempt: kept, listed, redeliverable, never sent by themselves. Serialised
   * per account, so two relays together do not pass the bound.
   */
  relayOutbox(now: number, limit?: number, maxPendingPerAccount?: number): Promise<number>;
  /**
   * Claims due deliveries for `leaseMs`. Serialised: no two senders claim one delivery. Fair between
   * accounts: round-robin, each account's oldest due first. With `perAccount` (default: no cap), an
   * account's live claims (any sender's, not run out at `now`) count against it: no claim takes an
   * account past `perAccount` live claims across all senders sharing the database (serialised per account),
   * so one account's backlog or slow receivers never hold back another account's delivery.
   */
  claimDue(owner: string, now: number, leaseMs: number, limit: number, perAccount?: number): Promise<Delivery[]>;
  /** Fenced by the claim's owner; false when the claim was lost. */
  recordAttempt(id: string, owner: string, attempt: AttemptRecord): Promise<boolean>;
  recordTest(webhookId: string, messageId: string, attempt: AttemptRecord): Promise<Delivery>;
  get(id: string): Promise<Delivery | undefined>;
  /** The most recent first. */
  list(webhookId: string, limit: number): Promise<Delivery[]>;
  /** A failed delivery goes out again with a fresh set of attempts. */
  redeliver(id: string, now: number): Promise<boolean>;
  /** When the next pending delivery falls due or its claim runs out. */
  nextDueAt(): Promise<number | undefined>;
  /** Deliveries waiting to be sent or retried (of webhooks active and not deleted): the operator's backlog gauge. */
  pendingCount(): Promise<number>;
}

export interface BreachesPort {
  /** Each number's records, by date (undated last), then breach name: a fixed order. */
  records(phones: readonly string[]): Promise<Map<string, BreachRecord[]>>;
  /** New (phone, breach) pairs, and the cached answers of their numbers forgotten. Atomic. */
  add(rows: readonly BreachRow[]): Promise<number>;
}

export interface EmailBreachesPort {
  /** Each address's records, by date (undated last), then breach name in byte order: a fixed order. */
  records(emails: readonly string[]): Promise<Map<string, EmailBreachRecord[]>>;
  /**
   * New (email, breach) pairs, and the cached answers of their addresses forgotten; a pair already
   * held keeps its date and data classes. Atomic; returns how many pairs were new.
   */
  add(rows: readonly EmailBreachRow[]): Promise<number>;
}

export const COMPANY_KEYS = { domain: 'domain', name: 'name_key', core: 'core_key' } as const;
export type CompanyKey = (typeof COMPANY_KEYS)[keyof typeof COMPANY_KEYS];

export interface CompaniesPort {
  /** Companies whose column equals one of `values`, grouped by it, larger companies first, then id. */
  byKey(column: CompanyKey, values: readonly string[]): Promise<Map<string, CompanyRow[]>>;
  /** Companies with every word of `core`, the last also as a prefix, best ranked first. */
  byWords(core: string, limit: number): Promise<CompanyRow[]>;
  /**
   * Candidates for a misspelt `core` (its first characters, as given), each with its core key;
   * the caller scores them. A superset of the near spellings, within the adapter's search limits.
   */
  spellingCandidates(core: string): Promise<(CompanyRow & { k: string })[]>;
  /** One batch; a write also forgets the cached company answers. Atomic. */
  upsert(records: readonly CompanyRecord[]): Promise<CompanyWrite>;
}


/**
 * What every process and machine on this store counts together: the limits that used to live in
 * one process's memory. Two tools, so that each limit picks what it can afford per call.
 *
 * - Slots: a counting semaphore per `name` (`size` slots numbered 0..size-1), each slot held by
 *   one holder until it is released or its `expiresAt` passes. Taking a slot is one statement, so a
 *   lookup request pays one round trip for it and one to give it back. Holders renew what they hold;
 *   a holder that stops renewing (killed, frozen) loses its slots when they expire.
 * - Shared records: one small text value per `name`, changed under a lock by a pure function, for
 *   state whose every change depends on the last one (a circuit breaker, a rate window, a setting
 *   all processes must agree on).
 */
export interface LimitsPort extends SharedRecords {
  /**
   * Takes up to `want` slots of `name` that no one holds (or whose holder let them expire) for
   * `holder` until `expiresAt`, and returns their numbers, fewer or none when the rest are held.
   * Two holders never hold one slot at once: of two that race for it, one gets it.
   */
  takeSlots(input: { name: string; size: number; want: number; holder: string; now: number; expiresAt: number }): Promise<number[]>;
  /** Gives these slots back; slots `holder` no longer holds (expired, taken) are left alone. */
  releaseSlots(name: string, holder: string, slots: readonly number[]): Promise<void>;
  /** Moves the expiry of every slot `holder` still holds to `expiresAt`; returns how many it holds. */
  renewSlots(holder: string, expiresAt: number): Promise<number>;
  /** How many slots of `name` are held and not expired at `now`. A read. */
  heldSlots(name: string, now: number): Promise<number>;
  // readShared and updateShared: SharedRecords (src/shared/shared-records.ts) says what they promise.
}

/** One entry of an account's audit log. Never a secret or a password: ids, names and addresses only. */
export interface AuditRecord {
  /** Increasing, never reused: the `before` cursor of a page. */
  id: number;
  accountId: string;
  at: number;
  action: string;
  /** `key` (with its id and name), `session`, `login` or `cli`. */
  actorType: string;
  actorId: string | null;
  actorName: string | null;
  targetId: string | null;
  sourceIp: string | null;
  userAgent: string | null;
  /** The caller's own label for the entry (an exposed-credential scan's `source`); null when none. */
  label?: string | null;
}

/** What an account's entries are cut to each time one is written. */
export interface AuditRetention {
  /** Entries written before this (epoch ms) are dropped. */
  since: number;
  /** Only the newest `max` entries of the account stay. */
  max: number;
}

export interface AuditPort {
  /** Writes the entry and drops the account's entries outside `keep`. Atomic. */
  append(entry: Omit<AuditRecord, 'id'>, keep: AuditRetention): Promise<void>;
  /**
   * The account's newest entries first, only those with an id below `before` when it is given.
   * A read. On PostgreSQL ids come from a sequence, so an entry may commit after a later id: a page
   * read in that instant can miss it (audit writes are rare and short; a reader who polls sees it).
   */
  list(accountId: string, page: { limit: number; before?: number }): Promise<AuditRecord[]>;
}

/** Why a job's objects were deleted: its owner asked, or its retention window ran out. */
export const DELETION_REASONS = { requested: 'requested', retention: 'retention' } as const;
export type DeletionReason = (typeof DELETION_REASONS)[keyof typeof DELETION_REASONS];

/** A deleted job: its row and ledger lines stay, its objects go. */
export interface JobDeletion {
  jobId: string;
  accountId: string;
  /** The staged input's key, which sits outside the job's prefixes. */
  inputKey: string;
  deletedAt: number;
  reason: DeletionReason;
  /** When every object of the job was found gone; null while some may remain. */
  purgedAt: number | null;
}

/**
 * Deleting jobs' objects and forgetting old events and deliveries. A deletion is marked before any
 * object is removed and finished later (`markPurged`), so a crash between the two leaves a marked
 * job that downloads refuse and the sweep finishes, never a downloadable job without its files.
 * Every operation is safe to run from several processes at once: marks are conditional on the row
 * not being marked yet, and object deletion is idempotent.
 */
export interface RetentionPort {
  /**
   * Marks a finished (completed, failed, cancelled) job deleted, serialised on the job's row. A job
   * deleted already is returned as it is (the first deletion's time and reason, `marked` false). `job_not_found`
   * (404); `invalid_state` (409) for a job that is not finished or whose work a worker still holds
   * (a lease not run out), which could write objects after they are deleted.
   */
  markDeleted(jobId: string, reason: DeletionReason, now: number): Promise<{ deletion: JobDeletion; marked: boolean }>;
  /** The job's deletion, or undefined when it is not deleted. A read. */
  deletion(jobId: string): Promise<JobDeletion | undefined>;
  /**
   * Marks up to `limit` jobs that finished before `before`, are not deleted and hold no live lease
   * as deleted for `retention`, and returns them. Atomic; two processes never mark one job twice.
   */
  expire(before: number, now: number, limit: number): Promise<JobDeletion[]>;
  /** Up to `limit` deleted jobs whose objects may remain, oldest deletion first. A read. */
  unpurged(limit: number): Promise<JobDeletion[]>;
  /** Every object of the job is gone. Idempotent. */
  markPurged(jobId: string, now: number): Promise<void>;
  /** Deletes up to `limit` outbox events sent before `before`; returns how many. Unsent ones stay. */
  purgeOutbox(before: number, limit: number): Promise<number>;
  /**
   * Deletes up to `limit` deliveries that succeeded or failed, last tried (or made) before `before`;
   * returns how many. Pending ones stay.
   */
  purgeDeliveries(before: number, limit: number): Promise<number>;
}

/**
 * Target lists, monitors, their targets and the durable schedule. Every operation takes the
 * caller's account and touches only that account's rows: another account's monitor or list reads
 * as absent (`undefined`, `false`, or `monitor_not_found` / `list_not_found`, 404).
 *
 * Counts (`targetCount`) are kept on the list and monitor rows by the same transaction that adds
 * or removes targets, so no request counts a million rows.
 */
export interface MonitorsPort {
  /** A list in `importing` state with no targets yet. Atomic (one insert). */
  createList(input: { id: string; accountId: string; name: string; type: MonitorType; sourceKey: string | null; now: number }): Promise<TargetListRecord>;
  /**
   * Adds a batch of normalised targets to an importing list, ignoring those it holds; returns how
   * many were new. Atomic: the batch and the count change commit together. `too_many_targets`
   * (413) past MAX_TARGETS, with nothing of the batch written. Serialised per list (a row lock on
   * PostgreSQL), so two batches racing cannot both pass the cap.
   */
  addListTargets(listId: string, targets: readonly string[]): Promise<number>;
  /** Records the import's counts and makes the list `ready`. Atomic (one update). */
  finishList(listId: string, counts: { invalidCount: number; duplicateCount: number; invalidByCode: Record<string, number> }): Promise<TargetListRecord>;
  getList(accountId: string, id: string): Promise<TargetListRecord | undefined>;
  /** Every list of the account (spec 8: contact lists are not paginated), newest first. A read. */
  lists(accountId: string, type?: MonitorType): Promise<TargetListRecord[]>;
  /** The list and its targets; monitors it seeded keep their own copies. Atomic. */
  removeList(accountId: string, id: string): Promise<boolean>;
  /**
   * A page of a list's targets in the list's order (as they were given), and the list's count. Two
   * reads (the list, the page); `list_not_found` (404) for another account's list.
   */
  listTargets(accountId: string, listId: string, page: Page): Promise<{ targets: string[]; total: number }>;

  /**
   * A new active monitor whose first run is due at `startAt`, seeded with a ready list's targets
   * and/or `targets`. Atomic: the monitor and its targets commit together. `list_not_found` (404),
   * `invalid_state` (409) for a list still importing, `invalid_request` (422) for a list of
   * another type, `too_many_targets` (413).
   */
  create(monitor: NewMonitor, seed?: { listId?: string | undefined; targets?: readonly string[] | undefined }): Promise<MonitorRecord>;
  get(accountId: string, id: string): Promise<MonitorRecord | undefined>;
  /** Oldest first. The page and the total are two reads: a monitor made between them may show in one only. */
  list(accountId: string, filter: Page & { type?: MonitorType | undefined; status?: MonitorStatus | undefined }): Promise<{ monitors: MonitorRecord[]; total: number }>;
  /**
   * Changes the given fields. A new frequency re-anchors the schedule on the current next_run_at,
   * so the run already due keeps its time and the new period counts from it. Serialised on the row
   * (one conditional update); undefined when the monitor is not the account's.
   */
  update(accountId: string, id: string, changes: MonitorChanges, now: number): Promise<MonitorRecord | undefined>;
  /** Paused: the schedule skips it. Idempotent. One update. */
  pause(accountId: string, id: string, now: number): Promise<MonitorRecord | undefined>;
  /**
   * Active again. The periods that passed while paused get no run: next_run_at stays if still ahead,
   * else moves to the first period start after `now`. Idempotent. Serialised on the row.
   */
  resume(accountId: string, id: string, now: number): Promise<MonitorRecord | undefined>;
  /** The monitor, its targets, runs and snapshots. Atomic. */
  remove(accountId: string, id: string): Promise<boolean>;

  /**
   * Adds normalised targets (those present are counted, not added twice). Atomic with the count;
   * `monitor_not_found` (404), `too_many_targets` (413) with nothing written. Serialised on the
   * monitor's row.
   */
  addTargets(accountId: string, monitorId: string, targets: readonly string[], now: number): Promise<{ added: number; present: number }>;
  /** As addTargets, with a ready list's targets, in one statement. Also `list_not_found`, `invalid_state`, `invalid_request` as `create`. */
  addListTargetsToMonitor(accountId: string, monitorId: string, listId: string, now: number): Promise<{ added: number; present: number }>;
  /** Returns how many of `targets` it held. Atomic with the count; `monitor_not_found` (404). */
  removeTargets(accountId: string, monitorId: string, targets: readonly string[]): Promise<number>;
  /** In target order. Two reads (page, total). `monitor_not_found` (404). */
  targets(accountId: string, monitorId: string, page: Page): Promise<{ targets: MonitorTarget[]; total: number }>;
  /** Distinct targets of the account's monitors (of `type`), each with the monitors watching it, by type then target. Two reads. */
  monitoringTargets(accountId: string, filter: Page & { type?: MonitorType | undefined }): Promise<{ targets: MonitoringTarget[]; total: number }>;

  /**
   * The schedule's one write: for up to `limit` active monitors whose next_run_at is at or before
   * `now`, records a queued run for the latest period start at or before `now` and moves
   * next_run_at to the first period start after `now`, so that a monitor that missed several
   * periods (the service was down) gets one run, not one per period. Returns the runs it made.
   *
   * Exactly one run per monitor and period, whatever number of processes or machines call this at
   * once: each monitor's move is a compare-and-set on the next_run_at it read (and on status
   * `active`), and the run's (monitor_id, period_start) is UNIQUE, so a claimer that lost the race
   * changes nothing. SQLite runs it as one IMMEDIATE transaction; PostgreSQL takes the due rows
   * with FOR UPDATE SKIP LOCKED, so two schedulers share the due monitors instead of queueing.
   */
  claimDueRuns(now: number, limit: number): Promise<MonitorRunRecord[]>;
  /**
   * A queued run by hand; next_run_at is not touched, last_run_at is. `monitor_not_found` (404);
   * `invalid_state` (409) for a paused monitor; `run_in_progress` (409) while another run of the
   * monitor is queued or running. Serialised on the monitor's row, so two requests never both queue.
   */
  queueManualRun(accountId: string, monitorId: string, runId: string, now: number): Promise<MonitorRunRecord>;
  /** The monitor's runs, newest first. Two reads. `monitor_not_found` (404). */
  runs(accountId: string, monitorId: string, page: Page): Promise<{ runs: MonitorRunRecord[]; total: number }>;
}

/**
 * Reading monitor runs and their snapshots (spec 2.8, 4.8), from the tables alone: what run
 * execution wrote is read here, never changed. Every operation takes the caller's account; another
 * account's run reads as absent (undefined, or `run_not_found` 404 from the streaming read).
 *
 * Snapshots come in the run's seq order. A page and its total are two reads: snapshots a running
 * run commits between them may show in one only. The stream reads by keyset (seq after the last
 * one read), so it sees every snapshot committed before it reaches it, once, and holds one page.
 */
export interface MonitorResultsPort {
  /** The account's run with its monitor's type. A read. */
  run(accountId: string, runId: string): Promise<TypedRunRecord | undefined>;
  /** The account's runs (of monitors of `type`), newest first. Two reads. */
  runs(accountId: string, filter: Page & { type?: MonitorType | undefined }): Promise<{ runs: TypedRunRecord[]; total: number }>;
  /** A page of the run's snapshots; with `changesOnly`, only those with changes. Two reads; an unknown run gives none. */
  snapshots(accountId: string, runId: string, filter: ResultsFilter): Promise<{ snapshots: SnapshotRecord[]; total: number }>;
  /**
   * Every snapshot of the run (with `changesOnly`, those with changes), pages of at most `pageSize`
   * (default SNAPSHOT_PAGE_SIZE), each one keyset query. `run_not_found` (404) before the first page.
   */
  streamSnapshots(accountId: string, runId: string, options: { changesOnly: boolean; pageSize?: number }): AsyncIterable<SnapshotRecord[]>;
  /**
   * Snapshots of the account's completed runs (of monitors of `type`), the newest run first, each
   * run's in seq order. Runs still going are left out, so a page does not shift under a reader while
   * a run writes. Two reads; the total counts rows (the changed-snapshot index bounds a
   * `changesOnly` count by the changes).
   */
  results(accountId: string, filter: MonitoringResultsFilter): Promise<{ results: MonitoringSnapshot[]; total: number }>;
}

/**
 * Executing monitor runs: starting a queued run (its targets become an engine job), and comparing
 * the job's results with each target's last result. Both steps are leased on the run's row
 * (`lease_owner`, `lease_epoch`, `lease_until`), like a job's phases: a claim is serialised (one
 * IMMEDIATE transaction on SQLite; `FOR UPDATE SKIP LOCKED` on PostgreSQL), so two processes never
 * take one step, and a process that dies loses its lease when it runs out. Every write of a step is
 * fenced by the lease epoch: a process that lost its lease changes nothing.
 */
export interface MonitorRunsPort {
  /**
   * Leases the oldest run that is queued, or started but without a job whose lease ran out (its
   * starter died), and whose monitor has no other run running: runs of one monitor never overlap,
   * so each compares with the one before. Moves it to `running` (started_at kept on a takeover).
   */
  claimStart(owner: string, now: number, leaseMs: number): Promise<RunClaim | undefined>;
  /**
   * Leases the oldest running run whose job has ended (completed, failed, cancelled) and whose
   * lease is free or ran out. Serialised like `claimStart`.
   */
  claimCompare(owner: string, now: number, leaseMs: number): Promise<RunClaim | undefined>;
  /** Fenced by the epoch; false when the lease is lost. */
  renewLease(runId: string, lease: { owner: string; epoch: number }, until: number): Promise<boolean>;
  /** Up to `limit` targets of the monitor after `after` (null: from the first), in the monitor's order (position, then target). A read. */
  targetPage(monitorId: string, after: TargetCursor | null, limit: number): Promise<TargetCursor[]>;
  /** Records the run's job and its number of targets and frees the lease. Fenced; false when the lease is lost. */
  recordJob(runId: string, lease: { owner: string; epoch: number }, jobId: string, totalRecords: number): Promise<boolean>;
  /** The last result (JSON text, or null before the first) of each of these targets the monitor holds. A read. */
  lastData(monitorId: string, targets: readonly string[]): Promise<Map<string, string | null>>;
  /**
   * One comparison checkpoint: the snapshots (upserted by run and seq, so a batch done again writes
   * the same rows), the targets' last results (rows of targets removed meanwhile are not made again),
   * the cursor and the running counts. Atomic; fenced by epoch and cursor: false, with nothing
   * written, when the lease is lost or the cursor moved.
   */
  commitComparison(input: ComparisonCommit): Promise<boolean>;
  /** Up to `limit` snapshots after `afterSeq` (only those with changes when `changedOnly`), by seq. A read. */
  snapshotPage(runId: string, page: { afterSeq: number; limit: number; changedOnly: boolean }): Promise<StoredSnapshot[]>;
  /** Up to `limit` snapshots with a high-value alert, by seq. A read. */
  alertSnapshots(runId: string, limit: number): Promise<StoredSnapshot[]>;
  /**
   * Ends a running run: status, reason, finished_at, the stats, the lease freed, and `events` in the
   * outbox. Atomic; fenced by epoch and status `running`, so a run ends once and its events are
   * written once; false when it was not this lease's to end.
   */
  finish(end: RunEnd): Promise<boolean>;
}

/**
 * Workflow definitions, their immutable versions, runs and logs (docs/workflows.md). Reads and
 * writes through the API take the caller's account: another account's workflow or run reads as
 * absent. Run execution (claimRun, commitStep) is leased and fenced like a job's chunks.
 */
export interface WorkflowsPort {
  /** The workflow and its version 1. Atomic. */
  create(input: WorkflowWrite & { id: string; accountId: string; now: number }): Promise<WorkflowRecord>;
  get(accountId: string, id: string): Promise<WorkflowRecord | undefined>;
  /** Oldest first. Two reads. */
  list(accountId: string, filter: Page & { status?: string | undefined }): Promise<{ workflows: WorkflowRecord[]; total: number }>;
  /** A new immutable version with `changes`; runs keep the version they pinned. Atomic, serialised on the workflow's row. */
  update(accountId: string, id: string, changes: WorkflowWrite, now: number): Promise<WorkflowRecord | undefined>;
  /** Soft: runs and logs stay readable; the workflow reads as absent. */
  delete(accountId: string, id: string, now: number): Promise<boolean>;
  /**
   * A queued run of the workflow's current version, unless the account already has `maxInFlight`
   * runs queued or running (too_many_runs, 429) or the workflow is not active (invalid_state, 409)
   * or gone (workflow_not_found, 404). Serialised on the account, so the limit holds across
   * processes and restarts.
   */
  startRun(input: { id: string; accountId: string; workflowId: string; input: string; maxInFlight: number; now: number }): Promise<WorkflowRunRecord>;
  run(accountId: string, runId: string): Promise<WorkflowRunRecord | undefined>;
  /** Newest first. Two reads. */
  runs(accountId: string, filter: Page & { workflowId?: string | undefined }): Promise<{ runs: WorkflowRunRecord[]; total: number }>;
  /** Oldest first. `workflow_run_not_found` (404) for another account's run. Two reads. */
  logs(accountId: string, runId: string, page: Page): Promise<{ logs: WorkflowLogRecord[]; total: number }>;
  /** A queued run, or a running one whose lease ran out and whose wake time (if any) has come. Takes a lease. */
  claimRun(owner: string, now: number, leaseMs: number): Promise<WorkflowRunClaim | undefined>;
  renewLease(runId: string, lease: Lease, until: number): Promise<boolean>;
  /** One step's result, charge, delivery, logs, cursor and counters. Atomic, fenced by epoch and cursor. */
  commitStep(commit: StepCommit): Promise<StepCommitResult>;
  /** Cancels a queued or running run, fencing out the lease that runs it. invalid_state (409) when it has ended. */
  cancel(accountId: string, runId: string, now: number): Promise<WorkflowRunRecord>;
  /** A failed run queued again from its failed step, on its pinned version. invalid_state (409) unless failed. */
  redrive(accountId: string, runId: string, now: number): Promise<WorkflowRunRecord>;
  /** Active scheduled workflows due at `now`, oldest due first. A read. */
  dueSchedules(now: number, limit: number): Promise<DueSchedule[]>;
  /**
   * One due time's run: moves next_run_at from `dueAt` to `nextAt` (compare-and-set) and, if this
   * call moved it, queues run `runId` of the current version, unless the account is at
   * `maxInFlight`. Atomic, serialised per account as startRun; one run per due time whatever number
   * of processes fire at once.
   */
  fireSchedule(fire: ScheduleFire): Promise<ScheduleFireResult>;
  /** JSON text of the steps of the version the run pinned; undefined for another account's run. A read. */
  pinnedSteps(accountId: string, runId: string): Promise<string | undefined>;
  /**
   * A new queued run of an ended run's pinned version and input, starting at step `cursor` with
   * `outputs` (the earlier steps' outputs, `stepsCompleted` of them) already in place. `workflow_run_not_found` (404),
   * `invalid_state` (409) while the run is queued or running, `too_many_runs` (429) as startRun.
   * Atomic, serialised per account as startRun.
   */
  rerun(input: { sourceRunId: string; id: string; accountId: string; cursor: number; outputs: string; stepsCompleted: number; maxInFlight: number; now: number }): Promise<WorkflowRunRecord>;
  /** Completed monitor runs with changes that active monitor_event workflows have not taken up, oldest first. A read. */
  dueMonitorEvents(limit: number): Promise<DueMonitorEvent[]>;
  /**
   * One monitor event's run: moves the workflow's event cursor to `finishedAt` if it was before it
   * (compare-and-set) and, if this call moved it, queues run `runId` unless the account is at
   * `maxInFlight` (`limited`: the event passes without a run). Atomic, serialised per account as
   * startRun; one run per event whatever number of processes sweep at once.
   */
  fireMonitorEvent(fire: MonitorEventFire): Promise<ScheduleFireResult>;
  /** Makes `hash` the ingest token's hash; the one it replaces keeps working until `graceUntil`. False for no such workflow. */
  setIngestToken(accountId: string, id: string, hash: string, graceUntil: number): Promise<boolean>;
  /** Both the current and the previous token stop working at once. False for no such workflow. */
  revokeIngestToken(accountId: string, id: string): Promise<boolean>;
  /** The workflow (not deleted, any status) whose current token, or previous one still in its grace period, hashes to `hash`. A read. */
  byIngestToken(hash: string, now: number): Promise<WorkflowRecord | undefined>;
}
