import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig, SETTINGS, type Config } from '../../src/config/load-config.js';
import { AppError } from '../../src/shared/errors.js';

/** Where each setting lands in the config; a setting missing here fails the coverage test below. */
const WHERE: Record<keyof typeof SETTINGS, (c: Config) => unknown> = {
  dataDir: (c) => c.dataDir,
  logLevel: (c) => c.logLevel,
  port: (c) => c.port,
  host: (c) => c.host,
  s3Endpoint: (c) => c.s3.endpoint,
  s3EmbeddedPort: (c) => c.s3.embeddedPort,
  s3Region: (c) => c.s3.region,
  s3Bucket: (c) => c.s3.bucket,
  s3AccessKeyId: (c) => c.s3.accessKeyId,
  s3SecretAccessKey: (c) => c.s3.secretAccessKey,
  s3ForcePathStyle: (c) => c.s3.forcePathStyle,
  databaseUrl: (c) => c.database.url,
  databasePoolSize: (c) => c.database.poolSize,
  sqliteSynchronous: (c) => c.sqlite.synchronous,
  sqliteBusyTimeoutMs: (c) => c.sqlite.busyTimeoutMs,
  sqliteCacheMb: (c) => c.sqlite.cacheMb,
  heapGrowthPercent: (c) => c.heapGrowthPercent,
  sealKey: (c) => c.sealKey,
  maxRows: (c) => c.jobs.maxRows,
  maxLineBytes: (c) => c.jobs.maxLineBytes,
  chunkRows: (c) => c.jobs.chunkRows,
  batchRows: (c) => c.jobs.batchRows,
  maxCellsPerRow: (c) => c.jobs.maxCellsPerRow,
  chunkBytes: (c) => c.jobs.chunkBytes,
  batchBytes: (c) => c.jobs.batchBytes,
  accountConcurrency: (c) => c.jobs.accountConcurrency,
  providerConcurrency: (c) => c.jobs.providerConcurrency,
  workerConcurrency: (c) => c.jobs.workerConcurrency,
  leaseSeconds: (c) => c.jobs.leaseSeconds,
  pollMs: (c) => c.jobs.pollMs,
  providerRetrySeconds: (c) => c.jobs.providerRetrySeconds,
  accountRunningJobs: (c) => c.jobs.accountRunningJobs,
  workflowRunsInFlight: (c) => c.workflows.runsInFlight,
  repeatFreeDays: (c) => c.billing.repeatFreeDays,
  defaultAccountCredits: (c) => c.billing.defaultAccountCredits,
  retentionDays: (c) => c.retentionDays,
  metrics: (c) => c.metrics.enabled,
  metricsToken: (c) => c.metrics.token,
  metricsPort: (c) => c.metrics.port,
  presignExpiresSeconds: (c) => c.presignExpiresSeconds,
  maxUploadBytes: (c) => c.api.maxUploadBytes,
  rateLimitPerMinute: (c) => c.api.rateLimitPerMinute,
  sessionTtlSeconds: (c) => c.api.sessionTtlSeconds,
  keyRevealSeconds: (c) => c.api.keyRevealSeconds,
  serveWorker: (c) => c.api.runWorker,
  headersTimeoutSeconds: (c) => c.api.headersTimeoutSeconds,
  bodyIdleSeconds: (c) => c.api.bodyIdleSeconds,
  bodyMinBytesPerSecond: (c) => c.api.bodyMinBytesPerSecond,
  maxConnections: (c) => c.api.maxConnections,
  heavyReadsPerAccount: (c) => c.api.heavyReadsPerAccount,
  maxConnectionsPerAddress: (c) => c.api.maxConnectionsPerAddress,
  maxRequestsPerAddress: (c) => c.api.maxRequestsPerAddress,
  quotaLists: (c) => c.api.quotas.lists,
  quotaMonitors: (c) => c.api.quotas.monitors,
  quotaTargetsPerList: (c) => c.api.quotas.targetsPerList,
  quotaTargets: (c) => c.api.quotas.targets,
  quotaStoredBytes: (c) => c.api.quotas.storedBytes,
  quotaApiKeys: (c) => c.api.quotas.apiKeys,
  trustProxy: (c) => c.api.trustProxy,
  genderProviderUrl: (c) => c.providers.gender.url,
  genderProviderAuth: (c) => c.providers.gender.auth,
  phoneProviderUrl: (c) => c.providers.phone_breaches.url,
  phoneProviderAuth: (c) => c.providers.phone_breaches.auth,
  companyProviderUrl: (c) => c.providers.company.url,
  companyProviderAuth: (c) => c.providers.company.auth,
  emailBreachProviderUrl: (c) => c.providers.email_breaches.url,
  emailBreachProviderAuth: (c) => c.providers.email_breaches.auth,
  passwordRangeUrl: (c) => c.passwordRange.url,
  passwordRangeAuth: (c) => c.passwordRange.auth,
  passiveDnsUrl: (c) => c.passiveDns.url,
  passiveDnsAuth: (c) => c.passiveDns.auth,
  ctUrl: (c) => c.ctSubdomains.url,
  ctAuth: (c) => c.ctSubdomains.auth,
  providerTimeoutMs: (c) => c.providers.timeoutMs,
  providerConnections: (c) => c.providers.connections,
  providerMaxBatch: (c) => c.providers.maxBatch,
  webhookAllowPrivate: (c) => c.webhooks.allowPrivate,
  webhookTimeoutMs: (c) => c.webhooks.attemptTimeoutMs,
  telegramApiUrl: (c) => c.webhooks.telegramApiUrl,
  webhookSender: (c) => c.webhooks.runSender,
  secretScanThreads: (c) => c.secretScans.threads,
  secretScanBudgetMs: (c) => c.secretScans.budgetMs,
  secretScanValidate: (c) => c.secretScans.validate,
  secretScanValidateTimeoutMs: (c) => c.secretScans.validateTimeoutMs,
  secretScanValidatorOrigin: (c) => c.secretScans.validatorOrigin,
  repoScanTimeoutMs: (c) => c.secretScans.repoTimeoutMs,
  repoScanMaxBytes: (c) => c.secretScans.repoMaxBytes,
  dnsServers: (c) => c.validity.dnsServers,
  smtpPort: (c) => c.validity.smtpPort,
  smtpHelo: (c) => c.validity.helo,
  smtpMailFrom: (c) => c.validity.mailFrom,
  smtpProbe: (c) => (c.validity.probe ? 'on' : 'off'),
  smtpTimeoutMs: (c) => c.validity.timeoutMs,
  smtpHostConcurrency: (c) => c.validity.hostConcurrency,
  smtpHostConnectIntervalMs: (c) => c.validity.connectIntervalMs,
  smtpAllowPrivate: (c) => c.validity.allowPrivate,
  validityDeadlineMs: (c) => c.validity.deadlineMs,
  rdapBootstrap: (c) => c.enrich.rdapBootstrap,
  gravatarUrl: (c) => c.enrich.gravatarUrl,
  dnsblZones: (c) => (c.enrich.dnsblZones.length === 0 ? undefined : c.enrich.dnsblZones.join(',')),
  enrichCaFile: (c) => c.enrich.caFile,
  enrichHttpsPort: (c) => c.enrich.httpsPort,
  enrichAllowPrivate: (c) => c.enrich.allowPrivate,
  enrichTimeoutMs: (c) => c.enrich.timeoutMs,
  enrichCacheSeconds: (c) => c.enrich.cacheSeconds,
  deferRetryMs: (c) => c.jobs.deferRetryMs,
};

const settings = Object.entries(SETTINGS) as [keyof typeof SETTINGS, (typeof SETTINGS)[keyof typeof SETTINGS]][];

function failure(env: NodeJS.ProcessEnv): AppError {
  try {
    loadConfig(env);
  } catch (e: unknown) {
    if (e instanceof AppError) return e;
    throw new Error(`loadConfig threw something other than an AppError: ${String(e)}`);
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('loadConfig defaults', () => {
  it('knows where every setting lands (so the default table below covers them all)', () => {
    expect(Object.keys(WHERE).sort()).toEqual(Object.keys(SETTINGS).sort());
  });

  it.each(settings)('with an empty env, %s takes its documented fallback', (key, setting) => {
    const config = loadConfig({});
    const expected = key === 'dataDir' ? path.resolve(setting.fallback as string) : setting.fallback;
    expect(WHERE[key](config)).toEqual(expected);
  });

  it.each(settings)('an empty or blank %s counts as unset', (key, setting) => {
    const blank = loadConfig({ [setting.name]: '   ' });
    const empty = loadConfig({ [setting.name]: '' });
    const unset = loadConfig({});
    expect(WHERE[key](blank)).toEqual(WHERE[key](unset));
    expect(WHERE[key](empty)).toEqual(WHERE[key](unset));
  });

  it('reads no variable outside the SLUICE_ prefix', () => {
    const config = loadConfig({ PORT: '9999', AWS_REGION: 'eu-west-1', DATA_DIR: '/elsewhere' });
    expect(config).toEqual(loadConfig({}));
  });
});

describe('loadConfig rejects a bad value with bad_config and the variable name', () => {
  const cases: { what: string; env: NodeJS.ProcessEnv; variable: string }[] = [
    { what: 'a non-number', env: { SLUICE_CHUNK_ROWS: 'abc' }, variable: 'SLUICE_CHUNK_ROWS' },
    { what: 'a fraction', env: { SLUICE_PORT: '80.5' }, variable: 'SLUICE_PORT' },
    { what: 'a number with a unit', env: { SLUICE_LEASE_SECONDS: '30s' }, variable: 'SLUICE_LEASE_SECONDS' },
    { what: 'an exponent', env: { SLUICE_MAX_ROWS: '1e6' }, variable: 'SLUICE_MAX_ROWS' },
    { what: 'a negative number', env: { SLUICE_POLL_MS: '-5' }, variable: 'SLUICE_POLL_MS' },
    { what: 'a port above 65535', env: { SLUICE_PORT: '65536' }, variable: 'SLUICE_PORT' },
    { what: 'a host name instead of an address', env: { SLUICE_HOST: 'localhost' }, variable: 'SLUICE_HOST' },
    { what: 'a value below the minimum', env: { SLUICE_LEASE_SECONDS: '1' }, variable: 'SLUICE_LEASE_SECONDS' },
    { what: 'zero workers', env: { SLUICE_WORKER_CONCURRENCY: '0' }, variable: 'SLUICE_WORKER_CONCURRENCY' },
    { what: 'a line limit below 1 KiB', env: { SLUICE_MAX_LINE_BYTES: '100' }, variable: 'SLUICE_MAX_LINE_BYTES' },
    { what: 'presigned URLs beyond the 7 days S3 allows', env: { SLUICE_PRESIGN_EXPIRES_SECONDS: '604801' }, variable: 'SLUICE_PRESIGN_EXPIRES_SECONDS' },
    { what: 'a bad boolean', env: { SLUICE_S3_FORCE_PATH_STYLE: 'maybe' }, variable: 'SLUICE_S3_FORCE_PATH_STYLE' },
    { what: 'a bad log level', env: { SLUICE_LOG_LEVEL: 'loud' }, variable: 'SLUICE_LOG_LEVEL' },
    { what: 'a synchronous mode that is unsafe in WAL', env: { SLUICE_SQLITE_SYNCHRONOUS: 'OFF' }, variable: 'SLUICE_SQLITE_SYNCHRONOUS' },
    { what: 'an endpoint that is no URL', env: { SLUICE_S3_ENDPOINT: 'the minio box' }, variable: 'SLUICE_S3_ENDPOINT' },
    { what: 'an endpoint that is not http(s)', env: { SLUICE_S3_ENDPOINT: 'ftp://minio:9000' }, variable: 'SLUICE_S3_ENDPOINT' },
    { what: 'a bucket with capitals and underscores', env: { SLUICE_S3_BUCKET: 'My_Bucket' }, variable: 'SLUICE_S3_BUCKET' },
    { what: 'a bucket name that is too short', env: { SLUICE_S3_BUCKET: 'ab' }, variable: 'SLUICE_S3_BUCKET' },
    { what: 'a bucket name that starts with a dash', env: { SLUICE_S3_BUCKET: '-sluice' }, variable: 'SLUICE_S3_BUCKET' },
    { what: 'a bucket name longer than 63', env: { SLUICE_S3_BUCKET: 'b'.repeat(64) }, variable: 'SLUICE_S3_BUCKET' },
    { what: 'an access key without its secret', env: { SLUICE_S3_ACCESS_KEY_ID: 'AKIA1' }, variable: 'SLUICE_S3_ACCESS_KEY_ID' },
    { what: 'a secret without its access key', env: { SLUICE_S3_SECRET_ACCESS_KEY: 's3cret' }, variable: 'SLUICE_S3_ACCESS_KEY_ID' },
    { what: 'a phone provider URL that is no URL', env: { SLUICE_PHONE_PROVIDER_URL: 'breaches box' }, variable: 'SLUICE_PHONE_PROVIDER_URL' },
    { what: 'a company provider URL that is not http(s)', env: { SLUICE_COMPANY_PROVIDER_URL: 'ftp://companies:21' }, variable: 'SLUICE_COMPANY_PROVIDER_URL' },
    { what: 'a database URL that is not PostgreSQL', env: { SLUICE_DATABASE_URL: 'mysql://sluice:hunter2@db.test:3306/sluice' }, variable: 'SLUICE_DATABASE_URL' },
    { what: 'a database URL that is no URL', env: { SLUICE_DATABASE_URL: 'postgres://sluice:hunter2@db box:5432/sluice' }, variable: 'SLUICE_DATABASE_URL' },
    { what: 'an empty connection pool', env: { SLUICE_DATABASE_POOL_SIZE: '0' }, variable: 'SLUICE_DATABASE_POOL_SIZE' },
    { what: 'a seal key that is too short', env: { SLUICE_SEAL_KEY: Buffer.alloc(16, 7).toString('base64') }, variable: 'SLUICE_SEAL_KEY' },
    { what: 'a seal key that is not base64', env: { SLUICE_SEAL_KEY: 'correct horse battery staple, which is long enough' }, variable: 'SLUICE_SEAL_KEY' },
    { what: 'batch rows above chunk rows', env: { SLUICE_CHUNK_ROWS: '500', SLUICE_BATCH_ROWS: '501' }, variable: 'SLUICE_BATCH_ROWS' },
  ];

  it.each(cases)('$what ($variable)', ({ env, variable }) => {
    const error = failure(env);
    expect(error.code).toBe('bad_config');
    expect(error.message).toContain(variable);
  });

  it.each(cases)('$what carries the variable in the error details too', ({ env, variable }) => {
    expect(failure(env).details).toEqual({ variable });
  });

  it('quotes the offending value, so a typo is visible in the message', () => {
    expect(failure({ SLUICE_CHUNK_ROWS: '25k' }).message).toContain('"25k"');
    expect(failure({ SLUICE_LOG_LEVEL: 'verbose' }).message).toContain('"verbose"');
  });

  // A database URL carries its password: echoed, it would land in every log that records the failure.
  it.each([
    ['not PostgreSQL', 'mysql://sluice:hunter2@db.test:3306/sluice'],
    ['no URL at all', 'postgres://sluice:hunter2@db box:5432/sluice'],
  ])('a database URL that is %s is refused without repeating its password', (_what, raw) => {
    const error = failure({ SLUICE_DATABASE_URL: raw });
    expect(error.code).toBe('bad_config');
    expect(error.message).toContain('SLUICE_DATABASE_URL');
    const everything = [error.message, error.stack ?? '', JSON.stringify(error.details), String(error.cause ?? '')].join('\n');
    expect(everything).not.toContain('hunter2');
  });
});

describe('loadConfig accepts what it documents', () => {
  it.each([
    ['true', true],
    ['1', true],
    ['YES', true],
    ['False', false],
    ['0', false],
    ['no', false],
  ])('SLUICE_S3_FORCE_PATH_STYLE=%s is %s', (raw, expected) => {
    expect(loadConfig({ SLUICE_S3_FORCE_PATH_STYLE: raw }).s3.forcePathStyle).toBe(expected);
  });

  it('matches enums without case and returns the canonical spelling', () => {
    const config = loadConfig({ SLUICE_LOG_LEVEL: 'DEBUG', SLUICE_SQLITE_SYNCHRONOUS: 'full' });
    expect(config.logLevel).toBe('debug');
    expect(config.sqlite.synchronous).toBe('FULL');
  });

  it('takes the bounds themselves, and batch rows equal to chunk rows', () => {
    const config = loadConfig({ SLUICE_PORT: '65535', SLUICE_CHUNK_ROWS: '10', SLUICE_BATCH_ROWS: '10', SLUICE_LEASE_SECONDS: '2' });
    expect(config.port).toBe(65535);
    expect(config.jobs).toMatchObject({ chunkRows: 10, batchRows: 10, leaseSeconds: 2 });
  });

  it('drops trailing slashes of the endpoint, so object URLs never hold "//"', () => {
    expect(loadConfig({ SLUICE_S3_ENDPOINT: 'http://127.0.0.1:9000//' }).s3.endpoint).toBe('http://127.0.0.1:9000');
  });

  it('puts each lookup\'s provider URL and auth under its own kind, without trailing slashes', () => {
    const config = loadConfig({
      SLUICE_GENDER_PROVIDER_URL: 'http://gender.test/',
      SLUICE_GENDER_PROVIDER_AUTH: 'Bearer g',
      SLUICE_PHONE_PROVIDER_URL: 'https://phones.test/svc/',
      SLUICE_PHONE_PROVIDER_AUTH: 'Bearer p',
      SLUICE_COMPANY_PROVIDER_URL: 'https://companies.test',
      SLUICE_COMPANY_PROVIDER_AUTH: 'Basic c',
    });
    expect(config.providers).toMatchObject({
      gender: { url: 'http://gender.test', auth: 'Bearer g' },
      phone_breaches: { url: 'https://phones.test/svc', auth: 'Bearer p' },
      company: { url: 'https://companies.test', auth: 'Basic c' },
    });
    expect(loadConfig({ SLUICE_PHONE_PROVIDER_URL: 'http://phones.test' }).providers).toMatchObject({
      gender: { url: undefined, auth: undefined },
      phone_breaches: { url: 'http://phones.test', auth: undefined },
      company: { url: undefined, auth: undefined },
    });
  });

  it.each(['postgres://sluice:pw@127.0.0.1:5432/sluice', 'postgresql://sluice@db.internal/sluice?sslmode=require'])(
    'takes the PostgreSQL URL %s as written, and its pool size',
    (raw) => {
      expect(loadConfig({ SLUICE_DATABASE_URL: raw, SLUICE_DATABASE_POOL_SIZE: '25' }).database).toEqual({ url: raw, poolSize: 25 });
    },
  );

  it('takes a seal key of 32 bytes in base64', () => {
    const key = Buffer.alloc(32, 9);
    expect(loadConfig({ SLUICE_SEAL_KEY: key.toString('base64') }).sealKey).toBe(key.toString('base64'));
    expect(loadConfig({}).sealKey).toBeUndefined();
  });

  it('takes an access key together with its secret', () => {
    expect(loadConfig({ SLUICE_S3_ACCESS_KEY_ID: 'AK', SLUICE_S3_SECRET_ACCESS_KEY: 'SK' }).s3).toMatchObject({ accessKeyId: 'AK', secretAccessKey: 'SK' });
  });
});

describe('loadConfig trims values', () => {
  it('trims whitespace around every kind of value', () => {
    const config = loadConfig({
      SLUICE_DATA_DIR: '  /srv/sluice-data \n',
      SLUICE_LOG_LEVEL: ' info ',
      SLUICE_PORT: '\t8081 ',
      SLUICE_S3_ENDPOINT: ' https://s3.example.test/ ',
      SLUICE_S3_REGION: ' eu-west-1 ',
      SLUICE_S3_BUCKET: ' my-bucket ',
      SLUICE_S3_ACCESS_KEY_ID: ' AK ',
      SLUICE_S3_SECRET_ACCESS_KEY: ' SK ',
      SLUICE_S3_FORCE_PATH_STYLE: ' false ',
      SLUICE_SQLITE_SYNCHRONOUS: ' FULL ',
    });
    expect(config.dataDir).toBe('/srv/sluice-data');
    expect(config.logLevel).toBe('info');
    expect(config.port).toBe(8081);
    expect(config.s3).toEqual({
      endpoint: 'https://s3.example.test',
      embeddedPort: 0,
      region: 'eu-west-1',
      bucket: 'my-bucket',
      accessKeyId: 'AK',
      secretAccessKey: 'SK',
      forcePathStyle: false,
    });
    expect(config.sqlite.synchronous).toBe('FULL');
  });
});

describe('the returned config', () => {
  it('is frozen all the way down, so no part of the engine can change another part\'s settings', () => {
    const config = loadConfig({ SLUICE_S3_ENDPOINT: 'http://127.0.0.1:9000', SLUICE_S3_ACCESS_KEY_ID: 'AK', SLUICE_S3_SECRET_ACCESS_KEY: 'SK' });
    for (const part of [config, config.s3, config.sqlite, config.jobs, config.billing]) expect(Object.isFrozen(part)).toBe(true);
    expect(() => {
      (config.jobs as { chunkRows: number }).chunkRows = 1;
    }).toThrow(TypeError);
    expect(() => {
      (config.s3 as { bucket: string }).bucket = 'other';
    }).toThrow(TypeError);
    expect(config.jobs.chunkRows).toBe(25_000);
    expect(config.s3.bucket).toBe('sluice');
  });

  it('is a fresh object per call: freezing one does not leak into the next', () => {
    const a = loadConfig({ SLUICE_CHUNK_ROWS: '5000' });
    const b = loadConfig({});
    expect(a.jobs.chunkRows).toBe(5000);
    expect(b.jobs.chunkRows).toBe(25_000);
    expect(a.jobs).not.toBe(b.jobs);
  });
});
