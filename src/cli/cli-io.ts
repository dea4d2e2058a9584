import { parseArgs, type ParseArgsConfig } from 'node:util';
import { AppError, ERROR_CODES } from '../shared/errors.js';

export interface CliIo {
  stdout: NodeJS.WriteStream;
  stderr: NodeJS.WriteStream;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** parseArgs with our error code, so a typo is exit 2 with a message, not a stack trace. */
export function parseCommand<O extends Options>(args: string[], options: O, positionals: number) {
  let parsed;
  // parseArgs reads `-5` as an option and answers with its own advice about `--`: say what is wrong instead.
  const negative = args.find((arg) => /^-\d/.test(arg));
  if (negative !== undefined) throw new AppError(ERROR_CODES.badArgument, `"${negative}" is not accepted: numbers here are whole numbers of 0 or more`);
  try {
    parsed = parseArgs({ args, options: { ...options, json: { type: 'boolean', default: false } }, allowPositionals: true, strict: true });
  } catch (e: unknown) {
    throw new AppError(ERROR_CODES.badArgument, e instanceof Error ? e.message : String(e), { cause: e });
  }
  if (parsed.positionals.length !== positionals) {
    throw new AppError(ERROR_CODES.badArgument, `expected ${positionals} argument(s), got ${parsed.positionals.length}`);
  }
  return parsed;
}

export function printJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

export function positiveInt(raw: string | undefined, name: string, fallback?: number): number {
  if (raw === undefined) {
    if (fallback === undefined) throw new AppError(ERROR_CODES.badArgument, `${name} is required`);
    return fallback;
  }
  if (!/^\d+$/.test(raw)) throw new AppError(ERROR_CODES.badArgument, `${name} must be a whole number, got "${raw}"`);
  return Number(raw);
}
