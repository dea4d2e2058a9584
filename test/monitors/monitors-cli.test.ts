import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { waitFor } from '../support/child-worker.js';
import { cliEnv, exitWithin, killChildren, parseJson, removeScratchDirs, runCli, scratchDir, spawnCli } from '../support/cli-process.js';
import { writeFile } from '../support/test-engine.js';

// On the built dist: `npm run build` first.
afterEach(async () => {
  await killChildren();
  removeScratchDirs();
});

function sandbox() {
  const root = scratchDir('sluice-monitors-cli-');
  return { root, env: cliEnv(path.join(root, 'data'), { SLUICE_POLL_MS: '20' }) };
}

async function ok(args: string[], env: NodeJS.ProcessEnv): Promise<Record<string, any>> {
  const result = await runCli([...args, '--json'], env);
  expect(result.code, `${args.join(' ')}: ${result.stderr}`).toBe(0);
  return parseJson(result);
}

describe('sluice lists and sluice monitors', () => {
  it('make a list from a CSV, a monitor from it, run it by hand, pause, resume and delete, each with --json', async () => {
    const { root, env } = sandbox();
    const account = (await ok(['accounts', 'create', '--credits', '10'], env)).id as string;
    const file = writeFile(root, 'staff.csv', 'name,email\nAnn,ann@example.com\nBen,BEN@example.com\nBad,not-an-email\nAnn again,ann@example.com\n');

    const list = await ok(['lists', 'create', file, '--account', account, '--name', 'Staff', '--type', 'email'], env);
    expect(list).toMatchObject({ name: 'Staff', type: 'email', status: 'ready', target_count: 2, duplicate_count: 1, invalid_count: 1 });
    expect(list.invalid.examples).toEqual([{ row: 3, value: 'not-an-email', code: 'invalid_email' }]);
    expect((await ok(['lists', 'list', '--account', account], env)).lists.map((l: { id: string }) => l.id)).toEqual([list.id]);
    expect(await ok(['lists', 'show', list.id, '--account', account], env)).toMatchObject({ id: list.id, target_count: 2 });

    const start = '2030-01-07T09:00:00.000Z';
    const monitor = await ok(
      ['monitors', 'create', '--account', account, '--name', 'Staff breaches', '--type', 'email', '--frequency', 'weekly', '--list', list.id, '--target', 'cat@example.com', '--target', 'nope', '--track', 'breached,count', '--start', start],
      env,
    );
    expect(monitor).toMatchObject({ type: 'email', frequency: 'weekly', tracked_fields: ['breached', 'count'], target_count: 3, credits_per_run: 3, next_run_at: start, status: 'active' });
    expect(monitor.targets.invalid).toMatchObject({ count: 1, by_code: { invalid_email: 1 } });
    expect(monitor.billing).toContain('1 credit per target the account has not paid for within the charge window');
    expect(await ok(['monitors', 'list', '--account', account], env)).toMatchObject({ total: 1, monitors: [{ id: monitor.id }] });

    const run = await ok(['monitors', 'run', monitor.id, '--account', account], env);
    expect(run).toMatchObject({ monitor_id: monitor.id, status: 'queued', trigger: 'manual', period_start: null });
    const shown = await ok(['monitors', 'show', monitor.id, '--account', account], env);
    expect(shown).toMatchObject({ next_run_at: start, recent_runs: [{ id: run.id, trigger: 'manual' }] });
    const twice = await runCli(['monitors', 'run', monitor.id, '--account', account, '--json'], env);
    expect(twice.code).toBe(1);
    expect(twice.stderr).toContain('run_in_progress');

    expect(await ok(['monitors', 'pause', monitor.id, '--account', account], env)).toMatchObject({ status: 'paused', next_run_at: null });
    expect(await ok(['monitors', 'resume', monitor.id, '--account', account], env)).toMatchObject({ status: 'active', next_run_at: start });
    expect(await ok(['monitors', 'delete', monitor.id, '--account', account], env)).toEqual({ id: monitor.id, deleted: true });
    const gone = await runCli(['monitors', 'show', monitor.id, '--account', account, '--json'], env);
    expect(gone.code).toBe(1);
    expect(gone.stderr).toContain('monitor_not_found');
    expect(await ok(['lists', 'delete', list.id, '--account', account], env)).toEqual({ id: list.id, deleted: true });
    expect((await ok(['lists', 'list', '--account', account], env)).total).toBe(0);
  });

  it('refuse an unsupported type, an unknown field, and a missing --account with their codes', async () => {
    const { env } = sandbox();
    const account = (await ok(['accounts', 'create', '--credits', '10'], env)).id as string;
    const base = ['monitors', 'create', '--account', account, '--name', 'x', '--frequency', 'weekly', '--json'];
    const unsupported = await runCli([...base, '--type', 'darkweb'], env);
    expect(unsupported.code).toBe(1);
    expect(unsupported.stderr).toContain('monitor_type_unsupported');
    const field = await runCli([...base, '--type', 'phone', '--track', 'shoe_size'], env);
    expect(field.stderr).toContain('unknown_tracked_field');
    const noAccount = await runCli(['monitors', 'list', '--json'], env);
    expect(noAccount.code).toBe(2);
    expect(noAccount.stderr).toContain('--account is required');
  });

  it('`sluice worker` records a run for a monitor that is due, once, and carries it out', async () => {
    const { env } = sandbox();
    const account = (await ok(['accounts', 'create', '--credits', '10'], env)).id as string;
    const monitor = await ok(['monitors', 'create', '--account', account, '--name', 'due now', '--type', 'company', '--frequency', 'monthly', '--target', 'Acme Inc'], env);
    const worker = spawnCli(['worker'], env);
    let runs: Record<string, any>[] = [];
    const queued = await waitFor(async () => {
      runs = (await ok(['monitors', 'show', monitor.id, '--account', account], env)).recent_runs;
      return runs.length > 0 && runs[0]!.status === 'completed';
    }, 30_000, 200);
    worker.child.kill('SIGTERM');
    expect(await exitWithin(worker.child, 15_000)).toBe(0);
    expect(queued, worker.stderr()).toBe(true);
    expect(runs).toEqual([expect.objectContaining({ trigger: 'schedule', status: 'completed', period_start: monitor.next_run_at })]);
    const after = await ok(['monitors', 'show', monitor.id, '--account', account], env);
    expect(after.recent_runs).toHaveLength(1);
    expect(Date.parse(after.next_run_at)).toBeGreaterThan(Date.parse(monitor.next_run_at));
  });
});
