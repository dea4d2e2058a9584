import { afterAll, describe, expect, it } from 'vitest';
import { killMachines } from '../../bench/chaos-machines.js';
import { runChaos } from '../../bench/chaos-run.js';
import { killAll } from '../../bench/children.js';
import { STORE_KINDS } from '../../src/storage/store.js';
import { freshDatabase } from '../support/postgres-database.js';
import { TEST_STORES } from '../support/test-engine.js';
import { expectCleanChaos } from './chaos-expectations.js';

// runChaos kills its workers and machines itself; this is for a run cut short by the time limit.
afterAll(async () => {
  await killAll();
  await killMachines();
});

/**
 * The short version of `npm run chaos -- --machines 4`, with the same code: four worker machines,
 * each a `sluice worker` process from dist/ with its own data dir and host name, share only one
 * PostgreSQL database and one S3 endpoint. They are killed with SIGKILL in split, process and
 * assembly and during a webhook attempt, and each is started again on its own data dir. Everything
 * is compared with an uninterrupted run on one data dir's SQLite. The seed changes from run to run;
 * a failure names it.
 */
describe('worker machines that share only PostgreSQL and S3, killed again and again', () => {
  it.runIf(TEST_STORES.includes(STORE_KINDS.postgres))('end with the result bytes and charges of an uninterrupted SQLite run, every job completed, and every event delivered at least once under one webhook-id', async () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const lines: string[] = [];
    const db = await freshDatabase('sluice_chaos');
    try {
      // Three connections a machine: the suite's other files share this PostgreSQL server.
      const report = await runChaos({ rows: 20_000, kills: 5, seed, chunks: 25, sideJobs: 2, deliveryKills: 1, machines: 4, databaseUrl: db.url, poolSize: 3, log: (line) => lines.push(line) });
      const context = `again with: node dist/bench/chaos.js --machines 4 --rows 20000 --kills 5 --chunks 25 --side-jobs 2 --delivery-kills 1 --seed ${seed}\n${lines.join('\n')}\n`;

      expectCleanChaos(report, context, { kills: 5, jobs: 3, deliveryKills: 1 });
      expect(report.restartsByMachine, context).toHaveLength(4);
      expect(report.restarts, context).toBeGreaterThanOrEqual(report.kills);
    } finally {
      await db.drop();
    }
  }, 240_000);
});
