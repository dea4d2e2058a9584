/**
 * Which test files run in which tier. Read by vitest.config.ts and checked by
 * test/architecture/test-tiers.test.ts.
 *
 * - `unit` (`npm run test:unit`): no build, no PostgreSQL, no child processes; a test engine keeps
 *   its objects in memory instead of starting the embedded S3 server. A file joins it only by being
 *   named here, and only if it needs none of those: it must not start a process (directly or through
 *   a helper), read `dist/`, open a PostgreSQL database or run once per store (`TEST_STORES`).
 * - `full`: every other test file, with the run's one PostgreSQL server. A new test file lands here
 *   by default, so none is ever left out of `npm test`, which runs both tiers.
 */
export const TEST_FILES = ['test/**/*.test.ts', 'src/**/*.test.ts', 'pipelines/**/*.test.ts'];

export const UNIT_TESTS = [
  // Tests beside the code are unit tests by the house rule (STYLE.md); the tier test keeps them so.
  'src/**/*.test.ts',
  'pipelines/**/*.test.ts',
  'test/architecture/dependencies.test.ts',
  'test/architecture/test-tiers.test.ts',
  'test/config/batch-rows-default.test.ts',
  'test/config/load-config.test.ts',
  'test/docs/readme.test.ts',
  'test/docs/docs-links.test.ts',
  'test/jobs/batch-plan.test.ts',
  'test/jobs/key-columns.test.ts',
  'test/monitors/tracked-values.test.ts',
  'test/security/dependency-audit.test.ts',
  'test/security/xml-compat.test.ts',
  'test/storage/billing-hasher.test.ts',
  'test/storage/billing-ledger-migration.test.ts',
  'test/storage/sqlite-billing-index.test.ts',
  // API tests on the in-memory object store: what they assert is the HTTP surface, not S3.
  'test/api/company-routes.test.ts',
  'test/api/email-breaches-route.test.ts',
  'test/api/gender-endpoint.test.ts',
  'test/api/openapi.test.ts',
  'test/api/trust-proxy.test.ts',
  'test/monitors/monitor-routes.test.ts',
  'test/webhooks/webhook-api.test.ts',
];
