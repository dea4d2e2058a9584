import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'src/**/*.test.ts', 'pipelines/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Starts the run's one PostgreSQL server (or takes SLUICE_TEST_DATABASE_URL) and provides its URL.
    globalSetup: ['test/support/postgres-global-setup.ts'],
    // Node 20 is supported on purpose; the AWS SDK's notice about its future Node 22 floor would
    // otherwise repeat in every test file's output (the CLI silences it the same way).
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
  },
});
