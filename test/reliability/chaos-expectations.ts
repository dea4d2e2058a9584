import { expect } from 'vitest';
import type { ChaosReport } from '../../bench/chaos-run.js';

/**
 * What every short chaos run must show, on one data dir or on several machines: at least `kills`
 * kills over the three phases, every job completed, results and ledger as in the uninterrupted run,
 * nothing lost, doubled or charged twice, one webhook-id per event, and the killed attempts sent again.
 */
export function expectCleanChaos(report: ChaosReport, context: string, expected: { kills: number; jobs: number; deliveryKills: number }): void {
  expect(report.problems, context).toEqual([]);
  expect(report.kills, context).toBeGreaterThanOrEqual(expected.kills);
  expect(Object.keys(report.phases).sort(), context).toEqual(expect.arrayContaining(['assemble', 'process', 'split']));
  expect(report.statuses, context).toEqual({ completed: expected.jobs });
  expect({ resultsIdentical: report.resultsIdentical, ledgerIdentical: report.ledgerIdentical }, context).toEqual({ resultsIdentical: true, ledgerIdentical: true });
  expect({ lost: report.rowsLost, doubled: report.rowsDoubled, chargesDoubled: report.chargesDoubled }, context).toEqual({ lost: 0, doubled: 0, chargesDoubled: 0 });
  expect(report.distinctIds, context).toBe(report.events);
  expect(report.deliveryKills, context).toBe(expected.deliveryKills);
  expect(report.deliveries, context).toBeGreaterThanOrEqual(report.events + report.deliveryKills);
}
