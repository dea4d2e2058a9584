import os from 'node:os';
import { defineConfig } from 'vitest/config';
import { TEST_FILES, UNIT_TESTS } from './test/tiers.js';

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Node 20 is supported on purpose; the AWS SDK's notice about its future Node 22 floor would
    // otherwise repeat in every test file's output (the CLI silences it the same way).
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // Two tiers (test/tiers.ts): `vitest run --project unit` is the fast one; `npm test` runs both.
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: UNIT_TESTS,
          // First, on its own: a failure shows within a minute, and its files never compete with the
          // full tier's processes and server for the cores.
          sequence: { groupOrder: 0 },
          // One file per core: these files spend much of their time waiting on timers (retry
          // backoffs) rather than on a core; vitest's default would leave one of two cores idle.
          maxWorkers: os.availableParallelism(),
          // Worker threads start faster than forked processes; no file of this tier needs a process
          // of its own (none changes directory, exits or spawns). Measured: 193 s against 231 s, loaded.
          pool: 'threads',
          // No server: these files open no PostgreSQL database, and engines keep objects in memory.
          provide: { postgresUrl: '', postgresTemplate: '', objectStore: 'memory' },
        },
      },
      {
        extends: true,
        test: {
          name: 'full',
          include: TEST_FILES,
          sequence: { groupOrder: 1 },
          exclude: [...UNIT_TESTS, '**/node_modules/**', 'dist/**'],
          // Starts the run's one PostgreSQL server (or takes SLUICE_TEST_DATABASE_URL) and provides its URL.
          globalSetup: ['test/support/postgres-global-setup.ts'],
          provide: { objectStore: 'embedded-s3' },
        },
      },
    ],
  },
});
