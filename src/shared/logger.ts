import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * The one root logger; everything below takes `log.child({ jobId })`. Logs go to stderr so that
 * `--json` output on stdout stays a single parseable document.
 */
export function createLogger(level: string): Logger {
  return pino(
    {
      level,
      base: { pid: process.pid },
      redact: { paths: ['authorization', 'headers.authorization', 'secret', '*.secret'], remove: true },
    },
    pino.destination({ fd: 2, sync: false }),
  );
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
