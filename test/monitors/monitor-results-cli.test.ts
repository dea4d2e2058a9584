import fs from 'node:fs';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cliEnv, parseJson, removeScratchDirs, runCli, scratchDir } from '../support/cli-process.js';
import { sqliteSeeder } from './result-fixtures.js';

// On the built dist: `npm run build` first.
afterEach(() => removeScratchDirs());

async function ok(args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, any>> {
  const result = await runCli([...args, '--json'], env);
  expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
  return parseJson(result);
}

describe('sluice monitors runs and results', () => {
  it("list a monitor's runs, page a run's results (changes only too), and write its CSV as the API does", async () => {
    const root = scratchDir('sluice-results-cli-');
    const env = cliEnv(path.join(root, 'data'), {});
    const account = (await ok(['accounts', 'create', '--credits', '10'], env)).id as string;
    const monitor = await ok(['monitors', 'create', '--account', account, '--name', 'Phones', '--type', 'phone', '--frequency', 'weekly', '--track', 'breached,total_breaches', '--target', '+4930123456'], env);
    const seeder = sqliteSeeder(path.join(root, 'data', 'sluice.db'));
    await seeder.seed({
      id: 'run-a',
      monitorId: monitor.id,
      accountId: account,
      createdAt: Date.UTC(2026, 0, 5),
      startedAt: Date.UTC(2026, 0, 5),
      finishedAt: Date.UTC(2026, 0, 5) + 2500,
      totalRecords: 3,
      changesDetected: 1,
      creditsUsed: 3,
      snapshots: [
        { target: '+4930123456', data: { breached: false, total_breaches: 0 } },
        { target: '+4930123457', data: { breached: true, total_breaches: 2 }, changes: { total_breaches: { old: 0, new: 2 }, breached: { old: false, new: true } } },
        { target: '+4930123458', data: { breached: false, total_breaches: 0 } },
      ],
    });
    seeder.close();

    const runs = await ok(['monitors', 'runs', monitor.id, '--account', account], env);
    expect(runs).toMatchObject({ total: 1, limit: 20, offset: 0, runs: [{ id: 'run-a', type: 'phone', status: 'completed', stats: { total_records: 3, changes_detected: 1, credits_used: 3, duration_ms: 2500 } }] });

    const all = await ok(['monitors', 'results', 'run-a', '--account', account, '--limit', '2', '--offset', '1'], env);
    expect(all).toMatchObject({ total: 3, limit: 2, offset: 1 });
    expect(all.results.map((s: { phone: string }) => s.phone)).toEqual(['+4930123457', '+4930123458']);
    const changed = await ok(['monitors', 'results', 'run-a', '--account', account, '--changes-only'], env);
    expect(changed).toMatchObject({ total: 1, results: [{ phone: '+4930123457', target: '+4930123457', has_changes: true, changes: { total_breaches: { old: 0, new: 2 } } }] });

    const file = path.join(root, 'changes.csv');
    expect(await ok(['monitors', 'results', 'run-a', '--account', account, '--changes-only', '--csv', file], env)).toEqual({ run_id: 'run-a', file, changes_only: true });
    expect(fs.readFileSync(file, 'utf8')).toBe(
      'target,has_changes,breached,total_breaches,changes\n' + `+4930123457,true,true,2,"${JSON.stringify(changed.results[0].changes).replace(/"/g, '""')}"\n`,
    );

    const other = (await ok(['accounts', 'create', '--credits', '1'], env)).id as string;
    const refused = await runCli(['monitors', 'results', 'run-a', '--account', other], env);
    expect([refused.code, refused.stderr]).toEqual([expect.any(Number), expect.stringContaining('Run not found')]);
    expect(refused.code).not.toBe(0);
  });
});
