import type { TestProject } from 'vitest/node';
import { startPostgres } from '../../bench/postgres-server.js';
import { createTemplateDatabase } from './postgres-template.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Superuser URL of the run's PostgreSQL server; '' when SLUICE_TEST_POSTGRES=off. */
    postgresUrl: string;
    /** Name of the run's migrated template database on that server; '' when there is none. */
    postgresTemplate: string;
  }
}

/**
 * One PostgreSQL server for the whole run (starting one per file would cost a second or more each);
 * tests isolate themselves with freshDatabase() or migratedDatabase(), the latter copied from one
 * template that this setup migrates once (graphile-worker's way: CREATE DATABASE ... TEMPLATE costs
 * a file copy, where running every migration again costs a second per database).
 * SLUICE_TEST_DATABASE_URL points the run at an outside server instead; SLUICE_TEST_POSTGRES=off
 * starts none, for runs on machines that cannot. Only the projects that list this file start it:
 * `npm run test:unit` starts no server.
 */
export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (process.env.SLUICE_TEST_POSTGRES === 'off') {
    project.provide('postgresUrl', '');
    project.provide('postgresTemplate', '');
    return undefined;
  }
  const outside = process.env.SLUICE_TEST_DATABASE_URL;
  const server = outside ? undefined : await startPostgres();
  const url = outside ?? server!.url;
  try {
    const template = await createTemplateDatabase(url);
    project.provide('postgresUrl', url);
    project.provide('postgresTemplate', template.name);
    return async () => {
      await template.drop();
      await server?.stop();
    };
  } catch (error) {
    await server?.stop();
    throw error;
  }
}
