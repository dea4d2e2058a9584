import { afterAll, describe, expect, it } from 'vitest';
import { runChaos } from '../../bench/chaos-run.js';
import { killAll } from '../../bench/children.js';

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

    expect(report.problems, context).toEqual([]);
    expect(report.kills, context).toBeGreaterThanOrEqual(5);
    expect(Object.keys(report.phases).sort(), context).toEqual(expect.arrayContaining(['assemble', 'process', 'split']));
    expect(report.statuses, context).toEqual({ completed: 3 });
    expect({ resultsIdentical: report.resultsIdentical, ledgerIdentical: report.ledgerIdentical }, context).toEqual({ resultsIdentical: true, ledgerIdentical: true });
    expect({ lost: report.rowsLost, doubled: report.rowsDoubled, chargesDoubled: report.chargesDoubled }, context).toEqual({ lost: 0, doubled: 0, chargesDoubled: 0 });
    expect(report.distinctIds, context).toBe(report.events);
    expect(report.deliveryKills, context).toBe(1);
    expect(report.deliveries, context).toBeGreaterThanOrEqual(report.events + report.deliveryKills);
  }, 180_000);
});
