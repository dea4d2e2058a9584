import fs from 'node:fs';
import type { Engine } from '../jobs/engine.js';
import { importIpSource, type IpImportSummary } from '../lookups/ip/ip-imports.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { IP_SOURCE_KINDS, type IpSourceKind } from '../storage/ip-network-records.js';
import { parseCommand, printJson, type CliIo } from './cli-io.js';

/** `sluice import rir|pfx2as|asnames|asrel FILE`: the IP network lookup's data (docs/ip-network.md). */
export const IP_IMPORT_USAGE_LINES = [
  'sluice import rir FILE [--date YYYY-MM-DD] [--json]',
  'sluice import pfx2as FILE --date YYYY-MM-DD [--json]',
  'sluice import asnames FILE [--date YYYY-MM-DD] [--json]',
  'sluice import asrel FILE [--date YYYY-MM-DD] [--json]',
] as const;

export function isIpImport(what: string | undefined): what is IpSourceKind {
  return what !== undefined && Object.hasOwn(IP_SOURCE_KINDS, what);
}

/**
 * Streams the file into a new generation of its source and makes it current at the end, in one
 * step (src/lookups/ip/ip-imports.ts): stopped at any point, it is simply run again.
 */
export async function ipImportCommand(engine: Engine, kind: IpSourceKind, args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(args, { date: { type: 'string' } }, 1);
  const file = positionals[0]!;
  if (!fs.statSync(file, { throwIfNoEntry: false })?.isFile()) throw new AppError(ERROR_CODES.badArgument, `no such file: ${file}`);
  const started = Date.now();
  let last = started;
  const progress = (s: IpImportSummary) => {
    if (values.json || Date.now() - last < 2000) return;
    last = Date.now();
    io.stderr.write(`importing ${kind}: ${s.lines.toLocaleString('en-US')} lines, ${s.imported.toLocaleString('en-US')} records\n`);
  };
  const summary = await importIpSource(engine.deps.store.ipNetwork, kind, fs.createReadStream(file), {
    date: values.date as string | undefined,
    now: engine.deps.clock.now(),
    onBatch: progress,
  });
  const seconds = Math.max((Date.now() - started) / 1000, 0.001);
  if (values.json) {
    printJson(io, { file, ...summary, seconds });
    return 0;
  }
  for (const { line, code } of summary.first_invalid) io.stderr.write(`line ${line}: ${code}\n`);
  const codes = Object.entries(summary.invalid_by_code).map(([code, n]) => `${code} ${n}`);
  io.stdout.write(
    [
      `source     ${summary.source} (data as of ${summary.data_as_of})`,
      `lines      ${summary.lines}`,
      `imported   ${summary.imported} (${Math.round(summary.imported / seconds).toLocaleString('en-US')} records/s)`,
      `skipped    ${summary.skipped} (comments, summaries, space without a holder)`,
      `invalid    ${summary.invalid}${codes.length > 0 ? ` (${codes.join(', ')})` : ''}`,
      '',
    ].join('\n'),
  );
  return 0;
}
