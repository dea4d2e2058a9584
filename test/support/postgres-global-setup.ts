import type { TestProject } from 'vitest/node';
import { startPostgres } from '../../bench/postgres-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the run's PostgreSQL server; '' when SLUICE_TEST_POSTGRES=off. */
    postgresUrl: string;
  }
}

/**
 * One PostgreSQL server for the whole run (starting one per file would cost a second or more each);
 * tests isolate themselves with freshDatabase(). SLUICE_TEST_DATABASE_URL points the run at an outside
 * server instead; SLUICE_TEST_POSTGRES=off starts none, for runs on machines that cannot.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env.SLUICE_TEST_POSTGRES === 'off') {
    project.provide('postgresUrl', '');
    return undefined;
  }
  const outside = process.env.SLUICE_TEST_DATABASE_URL;
  if (outside) {
    project.provide('postgresUrl', outside);
    return undefined;
  }
  const server = await startPostgres();
  project.provide('postgresUrl', server.url);
  return () => server.stop();
}
