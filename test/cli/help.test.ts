import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { cliEnv, runCli } from '../support/cli-process.js';
import { tempDir } from '../support/test-engine.js';

// On the built dist: `npm run build` first.
// A data dir that does not exist and a bad setting: help must need neither.
const env = () => cliEnv(path.join(tempDir(), 'never-made'), { SLUICE_PORT: 'not-a-port' });

const HELP: [args: string[], shows: string[]][] = [
  [['run', '--help'], ['sluice run FILE']],
  [['run', 'in.csv', '-h'], ['sluice run FILE']],
  [['jobs', '--help'], ['sluice jobs list', 'sluice jobs resume ID', 'sluice jobs download ID']],
  [['jobs', 'resume', '--help'], ['sluice jobs resume ID']],
  [['accounts', '--help'], ['sluice accounts create', 'sluice accounts topup ID N']],
  [['keys', '--help'], ['sluice keys create', 'sluice keys list']],
  [['monitors', '--help'], ['sluice monitors create', 'sluice monitors list', 'sluice monitors show ID', 'sluice monitors run ID', 'sluice monitors pause ID', 'sluice monitors resume ID', 'sluice monitors delete ID']],
  [['monitors', 'run', '--help'], ['sluice monitors run ID']],
  [['monitors', 'results', '--help'], ['sluice monitors results RUN_ID --account ID [--changes-only] [--limit N] [--offset N] [--csv FILE] [--json]']],
  [['monitors', 'runs', '--help'], ['sluice monitors runs ID --account ID [--limit N] [--offset N] [--json]']],
  [['lists', '--help'], ['sluice lists create FILE', 'sluice lists list', 'sluice lists show ID', 'sluice lists delete ID']],
  [['import', '--help'], ['sluice import breaches FILE', 'sluice import companies FILE']],
  [['serve', '--help'], ['sluice serve [--port N]']],
  [['worker', '--help'], ['sluice worker [--concurrency N]']],
  [['demo', '--help'], ['sluice demo [--data-dir DIR]']],
];

describe('sluice COMMAND --help', () => {
  it.each(HELP)('sluice %j prints its usage and exits 0', async (args, shows) => {
    const result = await runCli(args, env());
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/^usage:\n/);
    for (const line of shows) expect(result.stdout).toContain(line);
  });

  it('a subcommand gets only its own line', async () => {
    const result = await runCli(['jobs', 'resume', '--help'], env());
    expect(result.stdout).not.toContain('sluice jobs list');
  });

  it('-h after -- is a value, not a request for help', async () => {
    const result = await runCli(['run', '--', '-h'], env());
    expect(result.code).not.toBe(0);
    expect(result.stdout).not.toMatch(/^usage:/);
  });
});

describe('a failed sluice run', () => {
  it('prints its failed line once', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'in.csv');
    fs.writeFileSync(file, 'foo,bar\n1,2\n');
    const result = await runCli(['run', file, '--type', 'phone_breaches', '--out', path.join(dir, 'out')], cliEnv(path.join(dir, 'data')));
    expect(result.code).toBe(1);
    expect(result.stderr.split('\n').filter((l) => l.startsWith('failed:'))).toEqual(['failed: no_key_column']);
    expect(result.stdout).toContain('status     failed (no_key_column)');
  });
});
