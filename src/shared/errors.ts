/**
 * One error type for the whole engine. Callers match on `code`, never on message text, and the
 * retry policy travels with the error so that a worker can tell a blip from a dead end.
 */
export const ERROR_CODES = {
  // input files
  invalidUtf8: 'invalid_utf8',
  binaryFile: 'binary_file',
  compressedFile: 'compressed_file',
  emptyFile: 'empty_file',
  noRows: 'no_rows',
  noKeyColumn: 'no_key_column',
  columnNotFound: 'column_not_found',
  /** Two header cells of the same rank could be a lookup's key column: the caller must name one. */
  ambiguousColumn: 'ambiguous_column',
  lineTooLong: 'line_too_long',
  malformedCsv: 'malformed_csv',
  /** UTF-16 text without a byte-order mark: save it with one, or give the encoding. */
  utf16WithoutBom: 'utf16_without_bom',
  /** A UTF-16 file (declared or marked by its BOM) with a broken surrogate pair or an odd byte count. */
  invalidUtf16: 'invalid_utf16',
  /** Several delimiters fit the first records equally well: give `delimiter`. */
  ambiguousDelimiter: 'ambiguous_delimiter',
  /** A `delimiter` option that is none of comma, semicolon, tab, pipe. */
  invalidDelimiter: 'invalid_delimiter',
  /** An `encoding` option that is none of the supported encodings. */
  unknownEncoding: 'unknown_encoding',
  tooManyRows: 'too_many_rows',
  /** The header row has more cells than SLUICE_MAX_CELLS_PER_ROW: every output row would be that wide. */
  tooManyColumns: 'too_many_columns',
  // rows (data, not exceptions: they land in the error column)
  emptyValue: 'empty_value',
  /** A data row with more cells than SLUICE_MAX_CELLS_PER_ROW: invalid, its extra cells dropped. */
  rowTooWide: 'row_too_wide',
  invalidEmail: 'invalid_email',
  /** An email cell holding two or more addresses (`a@x.com, b@y.com`): which one to look up is a guess. */
  multipleAddresses: 'multiple_addresses',
  invalidPhone: 'invalid_phone',
  missingCountryCode: 'missing_country_code',
  /** A national number read with the job's default country but written without its trunk prefix: likely another country's. */
  implausibleNumber: 'implausible_number',
  lookupFailed: 'lookup_failed',
  providerUnavailable: 'provider_unavailable',
  // rows of a breach index import (counted and reported, never fatal)
  invalidBreach: 'invalid_breach',
  invalidDate: 'invalid_date',
  /** An email breach line whose data classes are too many or too long to be exposed data. */
  invalidDataClasses: 'invalid_data_classes',
  // company lookups: a key over the length limit; rows of a company directory import
  companyTooLong: 'company_too_long',
  invalidDomain: 'invalid_domain',
  invalidEmployeeCount: 'invalid_employee_count',
  /** A company file's website cell that names no public host (an IP, localhost, not a URL): left empty, the company kept. */
  invalidWebsite: 'invalid_website',
  // password breaches: a range prefix or SHA-1 that is not hex of its length; lines of a range import
  /** A 5-hex range prefix (password breaches) or a network prefix of an IP import line that does not parse. */
  invalidPrefix: 'invalid_prefix',
  invalidSha1: 'invalid_sha1',
  /** A line of a password range file that is not `SHA1:COUNT` (or `SUFFIX:COUNT` in a prefix's file). */
  invalidHashLine: 'invalid_hash_line',
  /** A password range file whose hashes are not in ascending order: the import stops, the old index stays. */
  unsortedInput: 'unsorted_input',
  // engine
  leaseLost: 'lease_lost',
  jobNotFound: 'job_not_found',
  accountNotFound: 'account_not_found',
  accountExists: 'account_exists',
  invalidState: 'invalid_state',
  /** A job failed because more of its rows ended as `error` than its failure budget allows. */
  errorBudgetExceeded: 'error_budget_exceeded',
  nothingToRetry: 'nothing_to_retry',
  /** The job's files were deleted (by its owner or the retention window); its record and ledger lines stay. */
  jobDeleted: 'job_deleted',
  insufficientCredits: 'insufficient_credits',
  unknownJobType: 'unknown_job_type',
  unknownCountry: 'unknown_country',
  storageUnavailable: 'storage_unavailable',
  databaseUnavailable: 'database_unavailable',
  objectNotFound: 'object_not_found',
  badConfig: 'bad_config',
  badArgument: 'bad_argument',
  // API
  unauthorized: 'unauthorized',
  forbidden: 'forbidden',
  notFound: 'not_found',
  keyNotFound: 'key_not_found',
  keyGone: 'key_gone',
  rateLimited: 'rate_limited',
  /** More heavy reads (watched targets, run results) in flight for one account than allowed; Retry-After: 1. */
  tooManyHeavyReads: 'too_many_heavy_reads',
  /** More requests in flight from one client address than allowed (SLUICE_MAX_REQUESTS_PER_ADDRESS). */
  tooManyInFlight: 'too_many_in_flight',
  /** Login refused before any hash: too many failures for this email or from this address. */
  tooManyAttempts: 'too_many_attempts',
  /** More logins waiting for a password hash than the process queues; retry after Retry-After. */
  serverBusy: 'server_busy',
  payloadTooLarge: 'payload_too_large',
  invalidRequest: 'invalid_request',
  idempotencyConflict: 'idempotency_conflict',
  idempotencyInFlight: 'idempotency_in_flight',
  badRequest: 'bad_request',
  // webhooks
  invalidUrl: 'invalid_url',
  blockedAddress: 'blocked_address',
  deliveryTimeout: 'delivery_timeout',
  deliveryUnreachable: 'delivery_unreachable',
  /** The account has as many webhooks as it may (MAX_WEBHOOKS_PER_ACCOUNT): delete one first. */
  tooManyWebhooks: 'too_many_webhooks',
  /** An account already holds MAX_KEYS_PER_ACCOUNT keys that are not revoked. */
  tooManyKeys: 'too_many_keys',
  /** A write would take the account past one of its quotas (lists, monitors, targets, stored bytes). */
  quotaExceeded: 'quota_exceeded',
  /** A delivery never sent: its account already had MAX_PENDING_DELIVERIES_PER_ACCOUNT pending. */
  backlogFull: 'backlog_full',
  // monitors and target lists
  monitorNotFound: 'monitor_not_found',
  listNotFound: 'list_not_found',
  /** A monitor type that is no type of spec 2.8. */
  unknownMonitorType: 'unknown_monitor_type',
  /** A type spec 2.8 names (domain, ip, darkweb) whose lookup Sluice does not have yet. */
  monitorTypeUnsupported: 'monitor_type_unsupported',
  /** A tracked field that the monitor type's results do not have. */
  unknownTrackedField: 'unknown_tracked_field',
  /** A list or monitor would hold more than MAX_TARGETS targets. */
  tooManyTargets: 'too_many_targets',
  /** A run by hand while another run of the monitor is queued or running. */
  runInProgress: 'run_in_progress',
  /** A monitor run that is not the caller's account's, or not of the monitor named in the path. */
  monitorRunNotFound: 'run_not_found',
  // exposed-credential scans
  /** `content` over 256 KB (spec 8): refused before any scan, nothing charged. */
  contentTooLarge: 'content_too_large',
  /** A scan that ran past its time budget (a pattern backtracking without end): stopped, nothing charged. */
  scanTimeout: 'scan_timeout',
  /** `config.rules` names a rule id that neither engine has. */
  unknownRule: 'unknown_rule',
  /** A repository URL that is not a public https address of a repository. */
  invalidRepository: 'invalid_repository',
  cloneFailed: 'clone_failed',
  repositoryTooLarge: 'repository_too_large',
  repositoryTimeout: 'repository_timeout',
  scanNotFound: 'scan_not_found',
  // workflows (docs/workflows.md)
  workflowNotFound: 'workflow_not_found',
  workflowRunNotFound: 'workflow_run_not_found',
  /** A webhook step names a webhook that is not an active generic webhook of the account. */
  workflowWebhookNotFound: 'workflow_webhook_not_found',
  /** No workflow secret of that name in the account (404 on its routes). */
  workflowSecretNotFound: 'workflow_secret_not_found',
  /** A step references `{{secrets.NAME}}` and the account has no secret NAME (422 at save). */
  unknownWorkflowSecret: 'unknown_workflow_secret',
  /** A definition that breaks a rule of docs/workflows.md; `details` names the step and the problem. */
  invalidWorkflow: 'invalid_workflow',
  /** A step type the spec names (domain_lookup, ip_lookup, darkweb_lookup) whose lookup Sluice does not have yet. */
  stepTypeUnsupported: 'step_type_unsupported',
  /** A trigger type the spec names that Sluice does not start runs for yet. */
  triggerUnsupported: 'trigger_unsupported',
  /** A reference that is not `input.<path>` or `steps.<earlier step>.output.<path>`, or names a forbidden property. */
  invalidReference: 'invalid_reference',
  invalidExpression: 'invalid_expression',
  /** An expression that used up its operation, time or size budget: cut off, never run to the end. */
  expressionBudgetExceeded: 'expression_budget_exceeded',
  /** The account has as many workflow runs queued or running as it may. */
  tooManyRuns: 'too_many_runs',
  internal: 'internal',
  // IP network lookups, and lines of the IP network imports (counted and reported, never fatal)
  /** Not an IPv4 or IPv6 address. */
  invalidIp: 'invalid_ip',
  /** An import line that is not in the file's format (too few fields, wrong type). */
  malformedLine: 'malformed_line',
  invalidAsn: 'invalid_asn',
} as const;

export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

export interface AppErrorOptions {
  statusCode?: number;
  retryable?: boolean;
  cause?: unknown;
  details?: Record<string, unknown>;
}

export class AppError extends Error {
  readonly code: ErrorCode;
  readonly statusCode: number | undefined;
  readonly retryable: boolean;
  readonly details: Record<string, unknown> | undefined;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.statusCode = options.statusCode;
    this.retryable = options.retryable ?? false;
    this.details = options.details;
  }
}

export function isAppError(e: unknown, code?: ErrorCode): e is AppError {
  return e instanceof AppError && (code === undefined || e.code === code);
}

/** Network-level failures that are worth another try: the peer may simply be restarting. */
const RETRYABLE_SYSTEM_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'SQLITE_BUSY',
  'SQLITE_BUSY_SNAPSHOT',
  'SQLITE_BUSY_TIMEOUT',
  'SQLITE_LOCKED',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  // PostgreSQL SQLSTATEs: a serialization failure or deadlock that outlived the store's own
  // retries, a connection lost or refused, a server shutting down or starting, no free connection.
  '40001',
  '40P01',
  '08000',
  '08001',
  '08003',
  '08004',
  '08006',
  '57P01',
  '57P02',
  '57P03',
  '53300',
]);

/** Every `catch (e: unknown)` at a boundary goes through here, so `cause` is never dropped. */
export function toAppError(e: unknown, fallback: ErrorCode = ERROR_CODES.internal): AppError {
  if (e instanceof AppError) return e;
  const systemCode = systemCodeOf(e);
  const message = e instanceof Error ? e.message : String(e);
  return new AppError(fallback, message, {
    cause: e,
    retryable: systemCode !== undefined && RETRYABLE_SYSTEM_CODES.has(systemCode),
  });
}

export function systemCodeOf(e: unknown): string | undefined {
  let current: unknown = e;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    current = current.cause;
  }
  return undefined;
}
