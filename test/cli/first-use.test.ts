import { execFile } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import net from 'node:net';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { PassThrough } from 'node:stream';
import { parseCommand, type CliIo } from '../../src/cli/cli-io.js';
import { runCommand } from '../../src/cli/run-command.js';
import { monitorsCommand } from '../../src/cli/monitors-command.js';
import { cliEnv, removeScratchDirs, runCli, scratchDir } from '../support/cli-process.js';
import { engineScope, TEST_STORES, writeFile } from '../support/test-engine.js';

/** What a new user met (issue 33, item 3): each mistake answered in one line, with no stack trace. */
afterEach(() => removeScratchDirs());

const STACK = /\n\s+at [\w.<>]+ \(|node:internal|\.js:\d+:\d+/;

describe('mistakes on the command line', () => {
  it('a negative number is refused in our words, not the argument parser\'s advice about --', () => {
    expect(() => parseCommand(['ops', '-5'], {}, 2)).toThrowError(/"-5" is not accepted: numbers here are whole numbers of 0 or more/);
    try {
      parseCommand(['ops', '-5'], {}, 2);
    } catch (e) {
      expect((e as { code: string }).code).toBe('bad_argument');
      expect(String((e as Error).message)).not.toMatch(/place it at the end|--/);
    }
  });

  it('`sluice accounts topup ops -5` exits 2 with one line', async () => {
    const result = await runCli(['accounts', 'topup', 'ops', '-5'], cliEnv(scratchDir()));
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('"-5" is not accepted');
    expect(result.stderr).not.toMatch(STACK);
  });

  it('`sluice serve` on a port in use says so and how to choose another, exit 2, no stack', async () => {
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const { port } = blocker.address() as net.AddressInfo;
    try {
      const result = await runCli(['serve', '--port', String(port), '--no-worker'], cliEnv(scratchDir(), { SLUICE_WEBHOOK_SENDER: 'false' }));
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(`port ${port} on 127.0.0.1 is in use by another process; stop it, or choose another with --port N or SLUICE_PORT`);
      expect(result.stderr).not.toMatch(STACK);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('`node dist/bench/dev-services.js --help` prints its usage; an unknown option gives the usage and exit 2', async () => {
    const script = path.resolve('dist/bench/dev-services.js');
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
        const child = execFile(process.execPath, [script, ...args], { timeout: 20_000, encoding: 'utf8' }, (_e, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }));
      });
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('usage: node dist/bench/dev-services.js [--dir DIR]');
    const wrong = await run(['--dirr', 'x']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('usage: node dist/bench/dev-services.js');
    expect(wrong.stderr).not.toMatch(STACK);
  });
});

describe.each(TEST_STORES)('`sluice run --dry-run` on a new data dir, on %s', (kind) => {
  const engines = engineScope(kind);
  afterEach(() => engines.closeAll());

  it('estimates against the grant the first run would give, and creates no local account', async () => {
    const e = await engines.open();
    const file = writeFile(e.dataDir, 'emails.csv', 'email\nmaria.rossi@example.com\njohn.smith@example.com\n');
    let out = '';
    const stdout = new PassThrough().on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const io = { stdout: stdout as unknown as NodeJS.WriteStream, stderr: new PassThrough() as unknown as NodeJS.WriteStream } satisfies CliIo;
    expect(await runCommand(e, [file, '--dry-run', '--json'], io)).toBe(0);
    expect(JSON.parse(out)).toMatchObject({ rows: 2, valid: 2, credits_needed: 2, balance: e.config.billing.defaultAccountCredits, available: e.config.billing.defaultAccountCredits });
    expect(await e.deps.billing.account('local')).toBeUndefined();
  });
});

describe('`sluice monitors run`', () => {
  const engines = engineScope();
  afterEach(() => engines.closeAll());

  it('says the run waits for a worker, and how to start one and follow it', async () => {
    const e = await engines.open();
    const account = await e.deps.billing.createAccount({ credits: 10, now: Date.now() });
    const monitor = await e.deps.store.monitors.create(
      { accountId: account.id, frequency: 'weekly', startAt: Date.now() + 86_400_000, now: Date.now(), id: randomUUID(), name: 'staff', type: 'email', trackedFields: ['breached'], changeDetection: 'any_change' },
      { targets: ['anna.schmidt@example.com'] },
    );
    let out = '';
    const stdout = new PassThrough().on('data', (chunk: Buffer) => (out += chunk.toString('utf8')));
    const io = { stdout: stdout as unknown as NodeJS.WriteStream, stderr: new PassThrough() as unknown as NodeJS.WriteStream };
    expect(await monitorsCommand(e, ['run', monitor.id, '--account', account.id], io)).toBe(0);
    expect(out).toMatch(new RegExp(`It starts when a \`sluice worker\` or \`sluice serve\` runs on this data: start one if none does. Follow it with \`sluice monitors runs ${monitor.id} --account ${account.id}\``));
  });
});

describe.each(TEST_STORES)('a mistyped --column, on %s', (kind) => {
  const engines = engineScope(kind);
  afterEach(() => engines.closeAll());

  it('is refused before any job is made, naming the columns the file has', async () => {
    const e = await engines.open();
    const file = writeFile(e.dataDir, 'people.csv', 'e-mail,name\nmaria.rossi@example.com,Maria\n');
    const io = { stdout: new PassThrough() as unknown as NodeJS.WriteStream, stderr: new PassThrough() as unknown as NodeJS.WriteStream };
    const refusal = await runCommand(e, [file, '--column', 'emial'], io).then(
      () => undefined,
      (error: unknown) => error as { code: string; message: string },
    );
    expect(refusal?.code).toBe('column_not_found');
    expect(refusal?.message).toContain('emial');
    expect(refusal?.message).toContain('e-mail');
    expect(refusal?.message).toContain('(nothing was submitted)');
    expect((await e.deps.jobs.list({ limit: 10, offset: 0 })).total).toBe(0);
  });
});
