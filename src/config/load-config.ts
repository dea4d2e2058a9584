import { isIP } from 'node:net';
import path from 'node:path';
import { AppError, ERROR_CODES } from '../shared/errors.js';

/**
 * Every SLUICE_* setting, validated once at start-up. A bad value stops the process with a message
 * that names the variable, instead of surfacing hours later as a strange job failure.
 */
export interface Config {
  /** Exposed-credential scans (spec 4.6): the scan threads, each scan's time budget, validation by default. */
  readonly secretScans: {
    readonly threads: number;
    readonly budgetMs: number;
    readonly validate: boolean;
    readonly validateTimeoutMs: number;
    readonly validatorOrigin: string | undefined;
    readonly repoTimeoutMs: number;
    readonly repoMaxBytes: number;
  };
  readonly dataDir: string;
  readonly logLevel: string;
  readonly port: number;
  /** The address `sluice serve` binds: loopback unless asked for more. */
  readonly host: string;
  readonly s3: S3Config;
  readonly sqlite: { readonly synchronous: 'NORMAL' | 'FULL'; readonly busyTimeoutMs: number; readonly cacheMb: number };
  /** PostgreSQL instead of the data dir's SQLite file, when `url` is set. */
  readonly database: { readonly url: string | undefined; readonly poolSize: number };
  /** V8's heap growth between full collections, in percent; 0 leaves V8's own (see openEngine). */
  readonly heapGrowthPercent: number;
  /**
   * The key that seals API keys for their reveal window and webhook secrets, 32 bytes in base64
   * (a Buffer could not be frozen with the rest); unset, one
   * made once per data dir. Machines that share a database must share it.
   */
  readonly sealKey: string | undefined;
  readonly jobs: JobLimits;
  readonly billing: { readonly repeatFreeDays: number; readonly defaultAccountCredits: number };
  /** Days a finished job's files, sent events and finished deliveries are kept; 0 keeps them for ever. */
  readonly retentionDays: number;
  readonly presignExpiresSeconds: number;
  readonly api: ApiConfig;
  readonly webhooks: WebhookConfig;
  readonly providers: ProviderConfig;
  /** Password breaches: a remote range service (`GET {url}/range/{prefix}`); unset, the imported index. */
  readonly passwordRange: RemoteService;
  /** The remote passive DNS service of the IP network lookup; unset URL: no `passive_dns` section. */
  readonly passiveDns: RemoteService;
  /** The remote certificate-transparency service of the domain report; unset URL: no `subdomains` section. */
  readonly ctSubdomains: RemoteService;
  /** `GET /metrics` on `serve`, and a worker's own metrics listener (port 0: none). */
  readonly metrics: { readonly enabled: boolean; readonly token: string | undefined; readonly port: number };
  /** Workflow runs queued or running per account, counted from the store (docs/workflows.md). */
  readonly workflows: { readonly runsInFlight: number };
  readonly validity: ValidityConfig;
  readonly enrich: EnrichConfig;
}

/** The enrich report and compliance verdicts (docs/email-enrich-compliance.md). */
export interface EnrichConfig {
  /** The IANA RDAP bootstrap file: a URL or a file path; undefined: IANA's own URL. */
  readonly rdapBootstrap: string | undefined;
  readonly gravatarUrl: string | undefined;
  readonly dnsblZones: readonly string[];
  /** A PEM file whose certificates are trusted beside Node's roots for MTA-STS and RDAP. */
  readonly caFile: string | undefined;
  readonly httpsPort: number;
  readonly allowPrivate: boolean;
  readonly timeoutMs: number;
  readonly cacheSeconds: number;
}

/** Email verification (docs/email-verification.md): DNS servers and the SMTP prober's manners. */
export interface ValidityConfig {
  /** `host:port` DNS servers; undefined: the system resolver. */
  readonly dnsServers: readonly { readonly host: string; readonly port: number }[] | undefined;
  readonly smtpPort: number;
  /** EHLO name; undefined: this machine's host name. */
  readonly helo: string | undefined;
  /** MAIL FROM address; undefined: `postmaster@` the EHLO name. */
  readonly mailFrom: string | undefined;
  readonly probe: boolean;
  readonly timeoutMs: number;
  readonly hostConcurrency: number;
  /** Least time between two new connections to one MX host, across processes; 0: no pacing. */
  readonly connectIntervalMs: number;
  readonly allowPrivate: boolean;
  readonly deadlineMs: number;
}

/**
 * The lookup kinds a remote service can answer, by the kind names the lookups use (config may not
 * import the lookups; open-engine checks at compile time that its engines cover exactly these).
 */
export const REMOTE_CAPABLE_KINDS = ['gender', 'phone_breaches', 'company', 'email_breaches'] as const;
export type RemoteCapableKind = (typeof REMOTE_CAPABLE_KINDS)[number];

/** One lookup's remote service; an unset URL means its embedded engine. */
export interface RemoteService {
  readonly url: string | undefined;
  /** The whole Authorization header value. */
  readonly auth: string | undefined;
}

/**
 * Where each lookup is answered: `providers.gender`, `providers.phone_breaches`,
 * `providers.company` and `providers.email_breaches`, one per kind; the limits below are shared by every remote service.
 */
export interface ProviderConfig extends Readonly<Record<RemoteCapableKind, RemoteService>> {
  readonly timeoutMs: number;
  readonly connections: number;
  readonly maxBatch: number;
}

export interface WebhookConfig {
  readonly allowPrivate: boolean;
  readonly attemptTimeoutMs: number;
  readonly telegramApiUrl: string;
  readonly runSender: boolean;
}

export interface ApiConfig {
  readonly maxUploadBytes: number;
  readonly rateLimitPerMinute: number;
  readonly sessionTtlSeconds: number;
  readonly keyRevealSeconds: number;
  readonly runWorker: boolean;
  readonly headersTimeoutSeconds: number;
  readonly bodyIdleSeconds: number;
  readonly bodyMinBytesPerSecond: number;
  readonly maxConnections: number;
  readonly heavyReadsPerAccount: number;
  readonly maxConnectionsPerAddress: number;
  readonly maxRequestsPerAddress: number;
  /** Per-account quotas (issue 27): what one account may hold; see src/jobs/account-quotas.ts. */
  readonly quotas: { readonly lists: number; readonly monitors: number; readonly targetsPerList: number; readonly targets: number; readonly storedBytes: number; readonly apiKeys: number };
  /** Addresses (IP, CIDR or a named range) of reverse proxies whose X-Forwarded-For is believed; unset: none. */
  readonly trustProxy: readonly string[] | undefined;
}

export interface S3Config {
  /** Undefined means: run the embedded server on loopback. */
  readonly endpoint: string | undefined;
  readonly embeddedPort: number;
  readonly region: string;
  readonly bucket: string;
  readonly accessKeyId: string | undefined;
  readonly secretAccessKey: string | undefined;
  readonly forcePathStyle: boolean;
}

export interface JobLimits {
  readonly maxRows: number;
  readonly maxLineBytes: number;
  readonly chunkRows: number;
  readonly batchRows: number;
  readonly maxCellsPerRow: number;
  readonly chunkBytes: number;
  readonly batchBytes: number;
  readonly accountConcurrency: number;
  readonly providerConcurrency: number;
  readonly workerConcurrency: number;
  readonly leaseSeconds: number;
  readonly pollMs: number;
  readonly providerRetrySeconds: number;
  readonly accountRunningJobs: number;
  /** First wait before a deferred pass over rows that failed for the moment (greylisting); doubled per pass. */
  readonly deferRetryMs: number;
}

interface Setting<T> {
  readonly name: string;
  readonly fallback: T;
  readonly describe: string;
  readonly parse: (raw: string, name: string) => T;
}

/** The table the README documents; keep it the single list of settings. */
export const SETTINGS = {
  dataDir: text('SLUICE_DATA_DIR', './.sluice', 'Directory for the SQLite file and the embedded S3 data.'),
  logLevel: oneOf('SLUICE_LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'warn', 'pino log level (logs go to stderr).'),
  port: int('SLUICE_PORT', 8080, 0, 65535, 'HTTP port of `sluice serve`.'),
  host: ipAddress('SLUICE_HOST', '127.0.0.1', 'Address `sluice serve` binds (`--host` wins): loopback only by default; `0.0.0.0` (or `::`) for every interface, as the Docker image sets.'),
  s3Endpoint: optionalUrl('SLUICE_S3_ENDPOINT', 'S3-compatible endpoint (AWS, MinIO, R2, Ceph). Unset: the embedded server on loopback.'),
  s3EmbeddedPort: int('SLUICE_S3_EMBEDDED_PORT', 0, 0, 65535, 'Port of the embedded S3 server; 0 picks one once per data dir and keeps it.'),
  s3Region: text('SLUICE_S3_REGION', 'us-east-1', 'S3 region.'),
  s3Bucket: text('SLUICE_S3_BUCKET', 'sluice', 'Bucket for inputs, chunks and results (created if missing).'),
  s3AccessKeyId: optionalText('SLUICE_S3_ACCESS_KEY_ID', 'S3 access key; unset uses the AWS default chain (embedded: a local key).'),
  s3SecretAccessKey: optionalText('SLUICE_S3_SECRET_ACCESS_KEY', 'S3 secret key; unset uses the AWS default chain (embedded: a local key).'),
  s3ForcePathStyle: bool('SLUICE_S3_FORCE_PATH_STYLE', true, 'Path-style addressing (needed by MinIO and the embedded server).'),
  databaseUrl: optionalPostgresUrl('SLUICE_DATABASE_URL', 'PostgreSQL connection URL (`postgres://user:password@host:5432/db`): every process that shares it shares jobs, billing and webhooks, on any machine. Unset: SQLite in the data dir.'),
  databasePoolSize: int('SLUICE_DATABASE_POOL_SIZE', 10, 1, 1000, 'Connections each process keeps open to PostgreSQL.'),
  sqliteSynchronous: oneOf('SLUICE_SQLITE_SYNCHRONOUS', ['NORMAL', 'FULL'] as const, 'NORMAL', 'SQLite `synchronous` in WAL mode: NORMAL survives process crashes, FULL also power loss.'),
  sqliteBusyTimeoutMs: int('SLUICE_SQLITE_BUSY_TIMEOUT_MS', 5000, 0, 600_000, 'How long a writer waits for another process\'s lock.'),
  sqliteCacheMb: int('SLUICE_SQLITE_CACHE_MB', 32, 1, 65_536, 'SQLite page cache of each process, in MiB: more keeps more of the billing cache in memory, at that much more RSS.'),
  sealKey: sealKey('SLUICE_SEAL_KEY', 'The key (base64 of 32 bytes, e.g. `openssl rand -base64 32`) that seals API keys for their reveal window and webhook secrets. Every machine that shares a database must have the same one. Unset: one made once per data dir, which suits one machine only.'),
  heapGrowthPercent: int('SLUICE_HEAP_GROWTH_PERCENT', 100, 0, 1000, 'How far the JavaScript heap may grow past what the last full garbage collection kept, in percent, before the next one. 0 leaves it to V8, which lets it grow up to 4x.'),
  maxRows: int('SLUICE_MAX_ROWS', 1_000_000, 1, 100_000_000, 'Rows per job; a larger file fails with `too_many_rows` before any charge.'),
  maxLineBytes: int('SLUICE_MAX_LINE_BYTES', 65_536, 1024, 64 * 1024 * 1024, 'Longest CSV row; a longer one rejects the file with `line_too_long`.'),
  chunkRows: int('SLUICE_CHUNK_ROWS', 25_000, 10, 10_000_000, 'Rows per chunk: the unit of resume and of parallel work.'),
  batchRows: int('SLUICE_BATCH_ROWS', 1_000, 1, 100_000, 'Rows per checkpoint transaction.'),
  maxCellsPerRow: int('SLUICE_MAX_CELLS_PER_ROW', 1_000, 1, 16_384, 'Most cells in a CSV row; a wider data row is `invalid` with `row_too_wide`, a wider header rejects the file with `too_many_columns`.'),
  chunkBytes: int('SLUICE_CHUNK_BYTES', 8 * 1024 * 1024, 1024, 1024 * 1024 * 1024, 'A chunk also ends at the first row that brings it to this many bytes, so wide rows cannot make a chunk larger.'),
  batchBytes: int('SLUICE_BATCH_BYTES', 1024 * 1024, 1024, 256 * 1024 * 1024, 'A checkpoint batch also ends before the row that would take it past this many bytes of chunk data (one row is always taken).'),
  accountConcurrency: int('SLUICE_ACCOUNT_CONCURRENCY', 64, 1, 10_000, 'Requests in flight to remote lookup services per account, across its jobs and every process on the store (embedded engines: per process).'),
  providerConcurrency: int('SLUICE_PROVIDER_CONCURRENCY', 128, 1, 10_000, 'Requests in flight to one remote lookup service, across every process on the store (embedded engines: per process).'),
  accountRunningJobs: int('SLUICE_ACCOUNT_RUNNING_JOBS', 4, 1, 10_000, 'Jobs of one account that run at once; its other jobs wait in `queued`.'),
  workerConcurrency: int('SLUICE_WORKER_CONCURRENCY', 2, 1, 256, 'Chunks a worker process works on at once.'),
  leaseSeconds: int('SLUICE_LEASE_SECONDS', 30, 2, 3600, 'A worker that stops renewing loses its chunk after this long.'),
  pollMs: int('SLUICE_POLL_MS', 250, 10, 60_000, 'How often an idle worker looks for work.'),
  providerRetrySeconds: int('SLUICE_PROVIDER_RETRY_SECONDS', 30, 1, 86_400, 'How long a job paused with `provider_unavailable` waits before a worker tries it again.'),
  workflowRunsInFlight: int('SLUICE_WORKFLOW_RUNS_IN_FLIGHT', 100, 1, 1_000_000, 'Workflow runs one account may have queued or running at once, counted from the store across every process; one more is refused with 429 `too_many_runs`.'),
  repeatFreeDays: int('SLUICE_REPEAT_FREE_DAYS', 180, 0, 3650, 'Repeat-free billing window: an address is charged once per account in this many days.'),
  metrics: bool('SLUICE_METRICS', true, '`GET /metrics` (Prometheus text format) on `sluice serve` and on a worker\'s metrics listener; false: no metrics endpoint.'),
  metricsToken: optionalText('SLUICE_METRICS_TOKEN', 'Bearer token `/metrics` requires (`Authorization: Bearer <token>`). Unset: `/metrics` answers anyone who can reach the port, which by default is loopback only.'),
  metricsPort: int('SLUICE_METRICS_PORT', 0, 0, 65535, 'Port of the metrics listener of `sluice worker` (it has no API), on SLUICE_HOST. 0 (the default): no listener. `serve` serves `/metrics` on its own port.'),
  retentionDays: int('SLUICE_RETENTION_DAYS', 30, 0, 36_500, 'Days after a job finishes (completed, failed or cancelled) before its input, chunks and result files are deleted; sent webhook events and finished deliveries are deleted after as many days. Its record and ledger lines stay. 0: never delete anything by age.'),
  defaultAccountCredits: int('SLUICE_DEFAULT_CREDITS', 1_000_000, 0, 1_000_000_000, 'Credits granted to the `local` account that `sluice run` creates when no --account is given.'),
  // An hour, as Kickbox gives: enough to start a download, and a link that leaks from a log, a
  // webhook receiver or a chat stops working within the hour.
  presignExpiresSeconds: int('SLUICE_PRESIGN_EXPIRES_SECONDS', 3_600, 1, 604_800, 'Lifetime of presigned download URLs (S3 allows at most 7 days).'),
  maxUploadBytes: int('SLUICE_MAX_UPLOAD_BYTES', 512 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024, 'Largest CSV `POST /api/jobs/bulk` accepts; larger gets 413.'),
  rateLimitPerMinute: int('SLUICE_RATE_LIMIT_PER_MINUTE', 200, 1, 1_000_000, 'API requests per rolling minute per account (all its keys, every API process on the store), unless the account has its own.'),
  sessionTtlSeconds: int('SLUICE_SESSION_TTL_SECONDS', 86_400, 60, 30 * 86_400, 'Lifetime of a login session token.'),
  keyRevealSeconds: int('SLUICE_KEY_REVEAL_SECONDS', 900, 0, 30 * 86_400, 'How long after creation an API key can be revealed again; after that, 410.'),
  // 20 s for headers and 30 s of silence in a body, as nginx's defaults (60 s) halved; 32 KiB/s
  // (256 kbit/s, a poor mobile uplink) still takes the largest default upload, 512 MiB, in 4.6 h.
  headersTimeoutSeconds: int('SLUICE_HEADERS_TIMEOUT_SECONDS', 20, 1, 600, 'Time a client has to send the headers of a request; then 408 and the connection is closed.'),
  bodyIdleSeconds: int('SLUICE_BODY_IDLE_SECONDS', 30, 1, 3600, 'Longest pause allowed inside a request body, and the time a body has before the minimum rate applies; then 408 and the connection is closed.'),
  bodyMinBytesPerSecond: int('SLUICE_BODY_MIN_BYTES_PER_SECOND', 32_768, 1, 1024 * 1024 * 1024, 'Slowest average rate, in bytes per second, at which a request body may arrive; a slower one is closed with 408. At this rate the largest upload takes SLUICE_MAX_UPLOAD_BYTES / rate seconds.'),
  maxConnections: int('SLUICE_MAX_CONNECTIONS', 512, 1, 1_000_000, 'HTTP connections `sluice serve` holds open at once; more are closed as soon as they are accepted. An open upload uses about three file descriptors.'),
  maxConnectionsPerAddress: int('SLUICE_MAX_CONNECTIONS_PER_ADDRESS', 64, 1, 1_000_000, 'HTTP connections one client address may hold open on `sluice serve`; more are closed as soon as they are accepted. Not applied when SLUICE_TRUST_PROXY is set (every client then has the proxy\'s address).'),
  maxRequestsPerAddress: int('SLUICE_MAX_REQUESTS_PER_ADDRESS', 32, 1, 1_000_000, 'Requests from one client address that `sluice serve` holds unanswered at once (a half-sent request counts); more get 429 `too_many_in_flight`. Not applied when SLUICE_TRUST_PROXY is set.'),
  heavyReadsPerAccount: int('SLUICE_HEAVY_READS_PER_ACCOUNT', 2, 1, 1000, 'Heavy reads (watched targets, a monitor\'s targets, run results) one account may have in flight in one API process; more get 429 `too_many_heavy_reads` with Retry-After: 1.'),
  quotaLists: int('SLUICE_QUOTA_LISTS', 100, 0, 1_000_000, 'Target lists one account may hold; one more gets 409 `quota_exceeded`.'),
  quotaMonitors: int('SLUICE_QUOTA_MONITORS', 50, 0, 1_000_000, 'Monitors one account may hold; one more gets 409 `quota_exceeded`.'),
  quotaTargetsPerList: int('SLUICE_QUOTA_TARGETS_PER_LIST', 100_000, 0, 100_000_000, 'Targets one list (or one monitor) may hold; a write past it gets 409 `quota_exceeded` and adds nothing.'),
  quotaTargets: int('SLUICE_QUOTA_TARGETS', 1_000_000, 0, 1_000_000_000, 'Targets one account may hold in all its lists and monitors together; a write past it gets 409 `quota_exceeded` and adds nothing.'),
  quotaStoredBytes: int('SLUICE_QUOTA_STORED_BYTES', 10 * 1024 * 1024 * 1024, 0, 2 ** 50, 'Bytes of job input files one account may keep stored (deleted jobs do not count); an upload past it gets 409 `quota_exceeded` and is not kept.'),
  quotaApiKeys: int('SLUICE_QUOTA_API_KEYS', 50, 1, 100_000, 'API keys one account may hold that are not revoked (disabled ones count); one more gets 409 `too_many_keys`.'),
  trustProxy: proxyList(
    'SLUICE_TRUST_PROXY',
    'Reverse proxies whose `X-Forwarded-For` gives the client\'s address (for the login throttle and the logs): a comma-separated list of IP addresses, CIDR ranges (`10.0.0.0/8`) or `loopback`, `linklocal`, `uniquelocal`. A hop count is refused: it would believe the header from clients that reach Sluice directly. Unset: the header is ignored and every request counts as from its TCP peer.',
  ),
  serveWorker: bool('SLUICE_SERVE_WORKER', true, 'Whether `sluice serve` also runs job workers in its own process.'),
  genderProviderUrl: optionalUrl('SLUICE_GENDER_PROVIDER_URL', 'Remote gender lookup service (see "Remote lookup providers"). Unset: the embedded engine.'),
  genderProviderAuth: optionalText('SLUICE_GENDER_PROVIDER_AUTH', 'The whole `Authorization` header value sent to the remote gender service, e.g. `Bearer ...`.'),
  phoneProviderUrl: optionalUrl('SLUICE_PHONE_PROVIDER_URL', 'Remote phone-breach lookup service (see "Remote lookup providers"). Unset: the embedded breach index.'),
  phoneProviderAuth: optionalText('SLUICE_PHONE_PROVIDER_AUTH', 'The whole `Authorization` header value sent to the remote phone-breach service, e.g. `Bearer ...`.'),
  companyProviderUrl: optionalUrl('SLUICE_COMPANY_PROVIDER_URL', 'Remote company lookup service (see "Remote lookup providers"). Unset: the embedded company directory.'),
  companyProviderAuth: optionalText('SLUICE_COMPANY_PROVIDER_AUTH', 'The whole `Authorization` header value sent to the remote company service, e.g. `Bearer ...`.'),
  emailBreachProviderUrl: optionalUrl('SLUICE_EMAIL_BREACH_PROVIDER_URL', 'Remote email-breach lookup service (see "Remote lookup providers"). Unset: the embedded email breach index.'),
  emailBreachProviderAuth: optionalText('SLUICE_EMAIL_BREACH_PROVIDER_AUTH', 'The whole `Authorization` header value sent to the remote email-breach service, e.g. `Bearer ...`.'),
  passwordRangeUrl: optionalUrl('SLUICE_PASSWORD_RANGE_URL', 'Remote k-anonymity range service for password breaches (`GET {url}/range/{prefix}`, e.g. `https://api.pwnedpasswords.com`); only 5 hex digits of a SHA-1 are sent. Unset: the index `sluice import passwords` loads.'),
  passwordRangeAuth: optionalText('SLUICE_PASSWORD_RANGE_AUTH', 'The whole `Authorization` header value sent to the password range service (another Sluice: `Bearer <API key>`).'),
  passiveDnsUrl: optionalUrl('SLUICE_PASSIVE_DNS_URL', 'Remote passive DNS service for the IP network lookup (docs/ip-network.md; the remote lookup protocol, kind `passive_dns`). Unset: answers have no `passive_dns` section.'),
  passiveDnsAuth: optionalText('SLUICE_PASSIVE_DNS_AUTH', 'The whole `Authorization` header value sent to the passive DNS service, e.g. `Bearer ...`.'),
  ctUrl: optionalUrl('SLUICE_CT_URL', 'Remote certificate-transparency service for the domain report\'s subdomains (docs/domain-report.md; the remote lookup protocol, kind `ct_subdomains`). Unset: reports have no `subdomains` section.'),
  ctAuth: optionalText('SLUICE_CT_AUTH', 'The whole `Authorization` header value sent to the certificate-transparency service, e.g. `Bearer ...`.'),
  providerTimeoutMs: int('SLUICE_PROVIDER_TIMEOUT_MS', 10_000, 100, 600_000, 'Time allowed for one request to a remote lookup service.'),
  providerMaxBatch: int('SLUICE_PROVIDER_MAX_BATCH', 100, 1, 10_000, 'Keys per request to a remote lookup service (1 for a service that takes one key at a time).'),
  providerConnections: int('SLUICE_PROVIDER_CONNECTIONS', 64, 1, 10_000, 'Keep-alive connections per remote lookup service and process; also its requests in flight.'),
  webhookAllowPrivate: bool('SLUICE_WEBHOOK_ALLOW_PRIVATE', false, 'For development and tests only: lets webhooks use plain http and loopback or private addresses. Off, webhook URLs must be https and resolve only to public addresses.'),
  webhookTimeoutMs: int('SLUICE_WEBHOOK_TIMEOUT_MS', 10_000, 100, 60_000, 'Time allowed for one webhook delivery attempt (the spec: 10 s).'),
  telegramApiUrl: url('SLUICE_TELEGRAM_API_URL', 'https://api.telegram.org', 'Base URL of the Telegram Bot API, for `telegram` webhooks.'),
  webhookSender: bool('SLUICE_WEBHOOK_SENDER', true, 'Whether `sluice serve` and `sluice worker` also deliver webhooks.'),
  secretScanThreads: int('SLUICE_SECRET_SCAN_THREADS', 1, 1, 64, 'Threads per process that run exposed-credential scans; a scan waits for a free one.'),
  secretScanBudgetMs: int('SLUICE_SECRET_SCAN_BUDGET_MS', 5_000, 50, 600_000, 'Time one exposed-credential scan may run on its thread; a scan over it is stopped (its thread ended) and refused with 422 `scan_timeout`, nothing charged.'),
  secretScanValidate: bool('SLUICE_SECRET_SCAN_VALIDATE', false, 'Whether exposed-credential scans that omit `config.validate` ask providers whether found credentials still work.'),
  secretScanValidatorOrigin: optionalUrl('SLUICE_SECRET_SCAN_VALIDATOR_ORIGIN', 'For development and tests only: every credential validation request goes to this origin (a fake provider) instead of the provider\'s. Connections still obey the webhook address policy (SLUICE_WEBHOOK_ALLOW_PRIVATE).'),
  repoScanTimeoutMs: int('SLUICE_REPO_SCAN_TIMEOUT_MS', 600_000, 1_000, 86_400_000, 'Time a code-host leak scan\'s clone may take; then the scan fails with `repository_timeout`, free.'),
  repoScanMaxBytes: int('SLUICE_REPO_SCAN_MAX_BYTES', 512 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024, 'Largest repository (its bare clone on disk) a code-host leak scan takes; a larger one fails with `repository_too_large`, free.'),
  secretScanValidateTimeoutMs: int('SLUICE_SECRET_SCAN_VALIDATE_TIMEOUT_MS', 5_000, 100, 60_000, 'Time allowed for one credential validation request to its provider; then `unknown`.'),
  dnsServers: dnsServerList('SLUICE_DNS_SERVERS', 'DNS servers the network lookups (email validity) ask, comma-separated `host:port` (`[::1]:53` for IPv6; port 53 if left out). Unset: the system resolver.'),
  smtpPort: int('SLUICE_SMTP_PORT', 25, 1, 65535, 'Port the email verifier connects to on MX hosts.'),
  smtpHelo: optionalText('SLUICE_SMTP_HELO', 'The name the email verifier gives in `EHLO`: a name whose A record and reverse DNS point at this machine, or mail servers treat the probe as spam. Unset: this machine\'s host name.'),
  smtpMailFrom: optionalText('SLUICE_SMTP_MAIL_FROM', 'The address the email verifier gives in `MAIL FROM` (an address you read). Unset: `postmaster@` the EHLO name.'),
  smtpProbe: oneOf('SLUICE_SMTP_PROBE', ['on', 'off'] as const, 'on', 'Whether the email verifier asks mail servers (SMTP on port 25); `off` is DNS-only mode for clouds that block port 25, and mailbox-level results are `unknown` with reason `probe_disabled`.'),
  smtpTimeoutMs: int('SLUICE_SMTP_TIMEOUT_MS', 10_000, 100, 600_000, 'Time the email verifier allows for a connection to an MX host and for each of its replies.'),
  smtpHostConcurrency: int('SLUICE_SMTP_HOST_CONCURRENCY', 2, 1, 1_000, 'SMTP sessions to one MX host at once, across every process and machine on the store.'),
  smtpHostConnectIntervalMs: int('SLUICE_SMTP_HOST_CONNECT_INTERVAL_MS', 100, 0, 60_000, 'Least time between two new SMTP connections to one MX host, across every process and machine on the store (0: no pacing).'),
  smtpAllowPrivate: bool('SLUICE_SMTP_ALLOW_PRIVATE', false, 'For tests only: lets the email verifier connect to MX hosts on loopback or private addresses. Off, an MX that resolves to such an address is never connected to (reason `blocked_address`).'),
  deferRetryMs: int('SLUICE_DEFER_RETRY_MS', 60_000, 10, 86_400_000, 'Rows a lookup could not settle for the moment (email validity: greylisting, a time-out, no mail server reachable) are tried again in a later pass of their chunk, without holding a worker: the first after this long, each next one after twice the wait before, 4 passes in all; what is still unsettled then stays an uncharged `error` row.'),
  validityDeadlineMs: int('SLUICE_VALIDITY_DEADLINE_MS', 15_000, 100, 600_000, 'How long `POST /api/lookup/email/validity` works on an address; what is not settled by then is answered `unknown` with `retry_after`, free.'),
  rdapBootstrap: optionalText('SLUICE_RDAP_BOOTSTRAP', 'Where the enrich report reads the IANA RDAP bootstrap file (RFC 9224) that names each TLD\'s RDAP server: a URL or a file path. Unset: https://data.iana.org/rdap/dns.json.'),
  gravatarUrl: optionalUrl('SLUICE_GRAVATAR_URL', 'Base URL of the Gravatar REST API (`GET /profiles/{sha256}`) for the enrich report\'s `gravatar_url` and `gravatar_profile`, e.g. `https://api.gravatar.com/v3`. Unset: not asked, the fields are absent.'),
  dnsblZones: optionalText('SLUICE_DNSBL_ZONES', 'DNS blocklist zones (RFC 5782) the enrich report asks about each mail server\'s address, comma-separated. Unset: none (most lists\' terms forbid unlicensed or public-resolver queries).'),
  enrichCaFile: optionalText('SLUICE_ENRICH_CA_FILE', 'A PEM file of certificates trusted beside Node\'s roots when the enrich report fetches MTA-STS policies and RDAP over HTTPS (a private CA; tests use a test CA).'),
  enrichHttpsPort: int('SLUICE_ENRICH_HTTPS_PORT', 443, 1, 65535, 'For tests only: the port MTA-STS policies are fetched from (RFC 8461 says 443).'),
  enrichAllowPrivate: bool('SLUICE_ENRICH_ALLOW_PRIVATE', false, 'For tests only: lets the enrich report fetch MTA-STS policies, RDAP and Gravatar from loopback or private addresses. Off, the webhook address policy applies to every address it connects to.'),
  enrichCacheSeconds: int('SLUICE_ENRICH_CACHE_SECONDS', 3_600, 0, 604_800, 'How long an enrich report is answered from the result cache (with `cached: true`) before it is built again from DNS, RDAP and the rest; 0: never cached.'),
  enrichTimeoutMs: int('SLUICE_ENRICH_TIMEOUT_MS', 5_000, 100, 60_000, 'Time the enrich report allows each HTTPS request (MTA-STS policy, RDAP, Gravatar).'),
} as const;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const read = <T>(setting: Setting<T>): T => {
    const raw = env[setting.name];
    if (raw === undefined || raw.trim() === '') return setting.fallback;
    return setting.parse(raw.trim(), setting.name);
  };
  const s = SETTINGS;
  const config: Config = {
    dataDir: path.resolve(read(s.dataDir)),
    logLevel: read(s.logLevel),
    port: read(s.port),
    host: read(s.host),
    s3: {
      endpoint: read(s.s3Endpoint),
      embeddedPort: read(s.s3EmbeddedPort),
      region: read(s.s3Region),
      bucket: bucketName(read(s.s3Bucket)),
      accessKeyId: read(s.s3AccessKeyId),
      secretAccessKey: read(s.s3SecretAccessKey),
      forcePathStyle: read(s.s3ForcePathStyle),
    },
    database: { url: read(s.databaseUrl), poolSize: read(s.databasePoolSize) },
    sqlite: { synchronous: read(s.sqliteSynchronous), busyTimeoutMs: read(s.sqliteBusyTimeoutMs), cacheMb: read(s.sqliteCacheMb) },
    heapGrowthPercent: read(s.heapGrowthPercent),
    sealKey: read(s.sealKey),
    jobs: {
      maxRows: read(s.maxRows),
      maxLineBytes: read(s.maxLineBytes),
      chunkRows: read(s.chunkRows),
      // Unset, the batch follows a small chunk down rather than failing on a value nobody set.
      batchRows: env[s.batchRows.name]?.trim() ? read(s.batchRows) : Math.min(s.batchRows.fallback, read(s.chunkRows)),
      maxCellsPerRow: read(s.maxCellsPerRow),
      chunkBytes: read(s.chunkBytes),
      batchBytes: read(s.batchBytes),
      accountConcurrency: read(s.accountConcurrency),
      providerConcurrency: read(s.providerConcurrency),
      workerConcurrency: read(s.workerConcurrency),
      leaseSeconds: read(s.leaseSeconds),
      pollMs: read(s.pollMs),
      providerRetrySeconds: read(s.providerRetrySeconds),
      accountRunningJobs: read(s.accountRunningJobs),
      deferRetryMs: read(s.deferRetryMs),
    },
    billing: { repeatFreeDays: read(s.repeatFreeDays), defaultAccountCredits: read(s.defaultAccountCredits) },
    retentionDays: read(s.retentionDays),
    metrics: { enabled: read(s.metrics), token: read(s.metricsToken), port: read(s.metricsPort) },
    workflows: { runsInFlight: read(s.workflowRunsInFlight) },
    presignExpiresSeconds: read(s.presignExpiresSeconds),
    api: {
      maxUploadBytes: read(s.maxUploadBytes),
      rateLimitPerMinute: read(s.rateLimitPerMinute),
      sessionTtlSeconds: read(s.sessionTtlSeconds),
      keyRevealSeconds: read(s.keyRevealSeconds),
      runWorker: read(s.serveWorker),
      headersTimeoutSeconds: read(s.headersTimeoutSeconds),
      bodyIdleSeconds: read(s.bodyIdleSeconds),
      bodyMinBytesPerSecond: read(s.bodyMinBytesPerSecond),
      maxConnections: read(s.maxConnections),
      heavyReadsPerAccount: read(s.heavyReadsPerAccount),
      maxConnectionsPerAddress: read(s.maxConnectionsPerAddress),
      maxRequestsPerAddress: read(s.maxRequestsPerAddress),
      quotas: {
        lists: read(s.quotaLists),
        monitors: read(s.quotaMonitors),
        targetsPerList: read(s.quotaTargetsPerList),
        targets: read(s.quotaTargets),
        storedBytes: read(s.quotaStoredBytes),
        apiKeys: read(s.quotaApiKeys),
      },
      trustProxy: read(s.trustProxy),
    },
    providers: {
      gender: { url: read(s.genderProviderUrl), auth: read(s.genderProviderAuth) },
      phone_breaches: { url: read(s.phoneProviderUrl), auth: read(s.phoneProviderAuth) },
      company: { url: read(s.companyProviderUrl), auth: read(s.companyProviderAuth) },
      email_breaches: { url: read(s.emailBreachProviderUrl), auth: read(s.emailBreachProviderAuth) },
      timeoutMs: read(s.providerTimeoutMs),
      connections: read(s.providerConnections),
      maxBatch: read(s.providerMaxBatch),
    },
    passwordRange: { url: read(s.passwordRangeUrl), auth: read(s.passwordRangeAuth) },
    passiveDns: { url: read(s.passiveDnsUrl), auth: read(s.passiveDnsAuth) },
    ctSubdomains: { url: read(s.ctUrl), auth: read(s.ctAuth) },
    webhooks: {
      allowPrivate: read(s.webhookAllowPrivate),
      attemptTimeoutMs: read(s.webhookTimeoutMs),
      telegramApiUrl: read(s.telegramApiUrl),
      runSender: read(s.webhookSender),
    },
    secretScans: {
      threads: read(s.secretScanThreads),
      budgetMs: read(s.secretScanBudgetMs),
      validate: read(s.secretScanValidate),
      validateTimeoutMs: read(s.secretScanValidateTimeoutMs),
      validatorOrigin: read(s.secretScanValidatorOrigin),
      repoTimeoutMs: read(s.repoScanTimeoutMs),
      repoMaxBytes: read(s.repoScanMaxBytes),
    },
    validity: {
      dnsServers: read(s.dnsServers),
      smtpPort: read(s.smtpPort),
      helo: read(s.smtpHelo),
      mailFrom: read(s.smtpMailFrom),
      probe: read(s.smtpProbe) === 'on',
      timeoutMs: read(s.smtpTimeoutMs),
      hostConcurrency: read(s.smtpHostConcurrency),
      connectIntervalMs: read(s.smtpHostConnectIntervalMs),
      allowPrivate: read(s.smtpAllowPrivate),
      deadlineMs: read(s.validityDeadlineMs),
    },
    enrich: {
      rdapBootstrap: read(s.rdapBootstrap),
      gravatarUrl: read(s.gravatarUrl),
      dnsblZones: (read(s.dnsblZones) ?? '').split(',').map((z) => z.trim().toLowerCase().replace(/\.$/, '')).filter((z) => z !== ''),
      caFile: read(s.enrichCaFile),
      httpsPort: read(s.enrichHttpsPort),
      allowPrivate: read(s.enrichAllowPrivate),
      timeoutMs: read(s.enrichTimeoutMs),
      cacheSeconds: read(s.enrichCacheSeconds),
    },
  };
  if ((config.s3.accessKeyId === undefined) !== (config.s3.secretAccessKey === undefined)) {
    throw bad('SLUICE_S3_ACCESS_KEY_ID', 'must be set together with SLUICE_S3_SECRET_ACCESS_KEY');
  }
  if (config.jobs.batchRows > config.jobs.chunkRows) {
    throw bad('SLUICE_BATCH_ROWS', `must not exceed SLUICE_CHUNK_ROWS (${config.jobs.chunkRows})`);
  }
  return deepFreeze(config);
}

function bad(name: string, problem: string): AppError {
  return new AppError(ERROR_CODES.badConfig, `${name} ${problem}`, { details: { variable: name } });
}

function text(name: string, fallback: string, describe: string): Setting<string> {
  return { name, fallback, describe, parse: (raw) => raw };
}

/** An IP literal, so that a typo stops start-up here instead of failing a DNS lookup in listen. */
function ipAddress(name: string, fallback: string, describe: string): Setting<string> {
  return {
    name,
    fallback,
    describe,
    parse: (raw) => {
      if (isIP(raw) === 0) throw bad(name, `must be an IPv4 or IPv6 address (127.0.0.1 or 0.0.0.0), got "${raw}"`);
      return raw;
    },
  };
}

function optionalText(name: string, describe: string): Setting<string | undefined> {
  return { name, fallback: undefined, describe, parse: (raw) => raw };
}

function int(name: string, fallback: number, min: number, max: number, describe: string): Setting<number> {
  return {
    name,
    fallback,
    describe,
    parse: (raw) => {
      if (!/^\d+$/.test(raw)) throw bad(name, `must be a whole number, got "${raw}"`);
      const value = Number(raw);
      if (value < min || value > max) throw bad(name, `must be between ${min} and ${max}, got ${value}`);
      return value;
    },
  };
}

function bool(name: string, fallback: boolean, describe: string): Setting<boolean> {
  return {
    name,
    fallback,
    describe,
    parse: (raw) => {
      const lower = raw.toLowerCase();
      if (['true', '1', 'yes'].includes(lower)) return true;
      if (['false', '0', 'no'].includes(lower)) return false;
      throw bad(name, `must be true or false, got "${raw}"`);
    },
  };
}

function oneOf<const T extends string>(name: string, values: readonly T[], fallback: T, describe: string): Setting<T> {
  return {
    name,
    fallback,
    describe: `${describe} One of ${values.join(', ')}.`,
    parse: (raw) => {
      const match = values.find((v) => v.toLowerCase() === raw.toLowerCase());
      if (match === undefined) throw bad(name, `must be one of ${values.join(', ')}, got "${raw}"`);
      return match;
    },
  };
}

function url(name: string, fallback: string, describe: string): Setting<string> {
  const { parse } = optionalUrl(name, describe);
  return { name, fallback, describe, parse: (raw) => parse(raw, name)! };
}

function optionalUrl(name: string, describe: string): Setting<string | undefined> {
  return {
    name,
    fallback: undefined,
    describe,
    parse: (raw) => {
      const protocol = urlProtocol(name, raw, 'a URL', true);
      if (protocol !== 'http:' && protocol !== 'https:') throw bad(name, 'must be an http or https URL');
      return raw.replace(/\/+$/, '');
    },
  };
}

function sealKey(name: string, describe: string): Setting<string | undefined> {
  return {
    name,
    fallback: undefined,
    describe,
    parse: (raw) => {
      // A secret: no message repeats it.
      const key = Buffer.from(raw, 'base64');
      if (!/^[A-Za-z0-9+/]+={0,2}$/.test(raw) || key.length !== 32) throw bad(name, 'must be 32 bytes in base64 (e.g. `openssl rand -base64 32`)');
      return raw;
    },
  };
}

const PROXY_RANGES = ['loopback', 'linklocal', 'uniquelocal'];

/** Every entry checked here, so a typo stops the process instead of trusting nothing (or too much). */
function proxyList(name: string, describe: string): Setting<readonly string[] | undefined> {
  return {
    name,
    fallback: undefined,
    describe,
    parse: (raw) => {
      if (/^\d+$/.test(raw)) throw bad(name, `must list the proxies' addresses, not a hop count ("${raw}"): a hop count trusts the header from any client that reaches Sluice directly`);
      const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '');
      if (entries.length === 0) throw bad(name, 'must list at least one address when set');
      for (const entry of entries) {
        if (PROXY_RANGES.includes(entry)) continue;
        const [address = '', prefix, extra] = entry.split('/');
        const family = isIP(address);
        const bits = family === 6 ? 128 : 32;
        const prefixOk = prefix === undefined || (/^\d+$/.test(prefix) && Number(prefix) >= 1 && Number(prefix) <= bits);
        if (family === 0 || !prefixOk || extra !== undefined) {
          throw bad(name, `must be a comma-separated list of IP addresses, CIDR ranges (prefix 1 to 32, or 1 to 128) or ${PROXY_RANGES.join(', ')}; got "${entry}"`);
        }
      }
      return entries;
    },
  };
}

/** `host:port` entries, each an IP literal: a DNS server named by a name would need DNS to be found. */
function dnsServerList(name: string, describe: string): Setting<readonly { host: string; port: number }[] | undefined> {
  return {
    name,
    fallback: undefined,
    describe,
    parse: (raw) => {
      const servers = raw
        .split(',')
        .map((entry) => entry.trim())
        .filter((entry) => entry !== '')
        .map((entry) => {
          const match = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry) ?? /^([^:]+)(?::(\d+))?$/.exec(entry);
          const host = match?.[1] ?? '';
          const port = Number(match?.[2] ?? 53);
          if (isIP(host) === 0 || !Number.isInteger(port) || port < 1 || port > 65535) {
            throw bad(name, `must be a comma-separated list of IP:port (\`127.0.0.1:53\`, \`[::1]:53\`), got "${entry}"`);
          }
          return { host, port };
        });
      if (servers.length === 0) throw bad(name, 'must list at least one server when set');
      return servers;
    },
  };
}

function optionalPostgresUrl(name: string, describe: string): Setting<string | undefined> {
  return {
    name,
    fallback: undefined,
    describe,
    parse: (raw) => {
      // The raw value may hold a password: no message repeats it.
      const protocol = urlProtocol(name, raw, 'a postgres:// URL', false);
      if (protocol !== 'postgres:' && protocol !== 'postgresql:') throw bad(name, 'must be a postgres:// or postgresql:// URL');
      return raw;
    },
  };
}

/** The protocol of `raw`, or bad_config; `echo` repeats the value (and its parse error) in the message. */
function urlProtocol(name: string, raw: string, what: string, echo: boolean): string {
  try {
    return new URL(raw).protocol;
  } catch (e: unknown) {
    if (!echo) throw new AppError(ERROR_CODES.badConfig, `${name} must be ${what}`, { details: { variable: name } });
    throw new AppError(ERROR_CODES.badConfig, `${name} must be ${what}, got "${raw}"`, { cause: e, details: { variable: name } });
  }
}

function bucketName(name: string): string {
  if (!/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name)) {
    throw bad('SLUICE_S3_BUCKET', `is not a valid bucket name: "${name}"`);
  }
  return name;
}

function deepFreeze<T extends object>(value: T): T {
  for (const inner of Object.values(value)) {
    if (inner !== null && typeof inner === 'object') deepFreeze(inner as object);
  }
  return Object.freeze(value);
}
