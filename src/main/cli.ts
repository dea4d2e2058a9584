#!/usr/bin/env node
import { accountsCommand, ACCOUNTS_USAGE } from '../cli/accounts-command.js';
import type { CliIo } from '../cli/cli-io.js';
import { demoCommand, DEMO_USAGE } from './demo.js';
import { importCommand, IMPORT_USAGE } from '../cli/import-command.js';
import { jobsCommand, JOBS_USAGE } from '../cli/jobs-command.js';
import { keysCommand, KEYS_USAGE } from '../cli/keys-command.js';
import { listsCommand, LISTS_USAGE } from '../cli/lists-command.js';
import { monitorsCommand, MONITORS_USAGE } from '../cli/monitors-command.js';
import { runCommand, RUN_USAGE } from '../cli/run-command.js';
import { serveCommand, SERVE_USAGE } from './serve.js';
import { workerCommand, WORKER_USAGE } from '../cli/worker-command.js';
import { loadConfig } from '../config/load-config.js';
import { isAppError, toAppError } from '../shared/errors.js';
import { createLogger } from '../shared/logger.js';
import { openEngine, type Engine } from './open-engine.js';
import { sealKeyBesideData } from './open-sealer.js';
import { privateDataDir } from './private-data-dir.js';

const USAGE = `Sluice: bulk-enrichment jobs with honest billing and resumable progress.

usage:
  ${SERVE_USAGE}
  ${RUN_USAGE}
  ${WORKER_USAGE}
  ${JOBS_USAGE.join('\n  ')}
  ${ACCOUNTS_USAGE.join('\n  ')}
  ${KEYS_USAGE.join('\n  ')}
  ${MONITORS_USAGE.join('\n  ')}
  ${LISTS_USAGE.join('\n  ')}
  ${IMPORT_USAGE}
  ${DEMO_USAGE}

Settings come from SLUICE_* environment variables (see README.md).
`;

type Command = (engine: Engine, args: string[], io: CliIo) => Promise<number>;

/** Each command's usage lines, for `sluice COMMAND --help` and `sluice COMMAND SUB --help`. */
const COMMAND_USAGE: Record<string, readonly string[]> = {
  serve: [SERVE_USAGE],
  run: [RUN_USAGE],
  worker: [WORKER_USAGE],
  jobs: JOBS_USAGE,
  accounts: ACCOUNTS_USAGE,
  keys: KEYS_USAGE,
  monitors: MONITORS_USAGE,
  lists: LISTS_USAGE,
  import: IMPORT_USAGE.split('\n  '),
  demo: [DEMO_USAGE],
};

/** `--help` or `-h` before any `--`: after it, such a word is a value (a file named `-h`). */
function wantsHelp(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/**
 * Printed before any setting is read or any store opened, so that help works on a machine with no
 * data dir and a bad SLUICE_* value. A subcommand (`jobs resume --help`) gets its own lines.
 */
function commandHelp(name: string, args: readonly string[], io: CliIo): number {
  const lines = COMMAND_USAGE[name];
  if (lines === undefined) {
    io.stderr.write(`unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const sub = args[0] !== undefined && !args[0].startsWith('-') ? lines.filter((l) => l.startsWith(`sluice ${name} ${args[0]} `) || l.includes(` | ${args[0]} `)) : [];
  io.stdout.write(`usage:\n  ${(sub.length > 0 ? sub : lines).join('\n  ')}\n\nSettings come from SLUICE_* environment variables (see README.md).\n`);
  return 0;
}

const COMMANDS: Record<string, Command> = {
  serve: serveCommand,
  run: runCommand,
  worker: workerCommand,
  jobs: jobsCommand,
  accounts: accountsCommand,
  keys: keysCommand,
  monitors: monitorsCommand,
  lists: listsCommand,
  import: importCommand,
};

// Everything a Sluice process creates is its owner's alone: the database (SQLite gives its -wal
// and -shm the database's mode), embedded S3 objects (s3rver writes them with default modes) and
// the port file hold password hashes, addresses, uploads and results. Set before anything is
// created; files a command writes for the user (`run --out`, `jobs download --out`) hold the same
// rows, so they are private too. Library code never touches the umask: it is the process's.
process.umask(0o077);

// Sluice supports Node 20.18+ on purpose; the SDK's notice about its own future Node 22 floor
// would otherwise open every command's output. An operator can still turn it back on.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

// `sluice jobs download ID | head` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on('error', (e: NodeJS.ErrnoException) => {
  if (e.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw e;
});

async function main(argv: string[]): Promise<number> {
  const io: CliIo = { stdout: process.stdout, stderr: process.stderr };
  const [name, ...args] = argv;
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    io.stdout.write(USAGE);
    return name === undefined ? 2 : 0;
  }
  if (wantsHelp(args)) return commandHelp(name, args, io);
  if (name === 'demo') return demoCommand(args, io);
  const command = COMMANDS[name];
  if (!command) {
    io.stderr.write(`unknown command "${name}"\n\n${USAGE}`);
    return 2;
  }
  const config = loadConfig(process.env);
  const log = createLogger(config.logLevel);
  const access = privateDataDir(config.dataDir);
  if (access === 'tightened') log.info({ dataDir: config.dataDir }, 'data dir made readable by its owner only');
  if (access === 'shared') log.warn({ dataDir: config.dataDir }, 'data dir is readable by other users and not ours to change; give Sluice a dir of its own');
  if (name === 'serve' || name === 'worker') sealKeyBesideData(config, log);
  const engine = await openEngine(config, log);
  try {
    return await command(engine, args, io);
  } finally {
    await engine.close();
    log.flush();
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    const error = toAppError(e);
    process.stderr.write(`sluice: ${error.message}${isAppError(e) ? ` (${error.code})` : ''}\n`);
    if (!isAppError(e)) process.stderr.write(`${e instanceof Error ? e.stack : ''}\n`);
    process.exitCode = error.code === 'bad_argument' || error.code === 'bad_config' || error.details?.usage === true ? 2 : 1;
  },
);
