import type { Engine } from '../jobs/engine.js';
import { importPasswords, type PasswordImportSummary } from '../lookups/password/password-range-import.js';
import { parseCommand, printJson, type CliIo } from './cli-io.js';

export const PASSWORD_IMPORT_USAGE = 'sluice import passwords FILE|DIR [--json]';

/**
 * `sluice import passwords`: HIBP's downloader output into this data dir's range index, which
 * the store then points to. Progress goes to stderr, the summary to stdout.
 */
export async function importPasswordsCommand(engine: Engine, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, {}, 1);
  const input = positionals[0]!;
  const started = Date.now();
  let last = started;
  const progress = (s: PasswordImportSummary) => {
    if (values.json || Date.now() - last < 2_000) return;
    last = Date.now();
    io.stderr.write(`importing passwords: ${s.lines.toLocaleString('en-US')} lines, ${rate(s.lines, started)} lines/s\n`);
  };
  const summary = await importPasswords(input, {
    dataDir: engine.config.dataDir,
    records: engine.deps.store.limits,
    now: () => engine.deps.clock.now(),
    onProgress: progress,
  });
  if (values.json) {
    printJson(io, { input, ...summary, seconds: (Date.now() - started) / 1000 });
    return 0;
  }
  for (const { file, line, code } of summary.first_invalid) io.stderr.write(`${file} line ${line}: ${code}\n`);
  const codes = Object.entries(summary.invalid_by_code).map(([code, n]) => `${code} ${n}`);
  io.stdout.write(
    [
      `lines       ${summary.lines}`,
      `imported    ${summary.imported}`,
      `duplicates  ${summary.duplicates}`,
      `padding     ${summary.padding} (count 0 rows, skipped)`,
      `invalid     ${summary.invalid}${codes.length > 0 ? ` (${codes.join(', ')})` : ''}`,
      ...(summary.ignored_files > 0 ? [`ignored     ${summary.ignored_files} files that are no prefix's file`] : []),
      `index       ${summary.index_file} (${rate(summary.lines, started)} lines/s)`,
      '',
    ].join('\n'),
  );
  return 0;
}

function rate(lines: number, started: number): string {
  return Math.round(lines / Math.max((Date.now() - started) / 1000, 0.001)).toLocaleString('en-US');
}
