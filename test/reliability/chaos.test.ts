import { afterAll, describe, it } from 'vitest';
import { runChaos } from '../../bench/chaos-run.js';
import { killAll } from '../../bench/children.js';
import { expectCleanChaos } from './chaos-expectations.js';

// runChaos kills its workers itself; this is for a run cut short by the time limit.
afterAll(() => killAll());

/**
 * The short version of `npm run chaos` (DESIGN guarantees 1 to 3, and durable webhooks), with the
 * same code: worker processes from dist/ are killed with SIGKILL in split, process and assembly and
 * during a webhook attempt, and everything is compared with a run that was never killed. The seed
 * changes from run to run, so that the suite tries other moments over time; a failure names it.
 */
describe('a job whose worker processes are killed again and again', () => {
  it('ends with the result bytes and charges of an uninterrupted run, and every event delivered at least once under one webhook-id', async () => {
    const seed = Math.floor(Math.random() * 2 ** 31);
    const lines: string[] = [];
    const report = await runChaos({ rows: 20_000, kills: 5, seed, chunks: 25, sideJobs: 2, deliveryKills: 1, log: (line) => lines.push(line) });
    const context = `again with: node dist/bench/chaos.js --rows 20000 --kills 5 --chunks 25 --side-jobs 2 --delivery-kills 1 --seed ${seed}\n${lines.join('\n')}\n`;

    expectCleanChaos(report, context, { kills: 5, jobs: 3, deliveryKills: 1 });
  }, 180_000);
});
