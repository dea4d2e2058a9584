import { pino, type DestinationStream, type Logger } from 'pino';
import pretty from 'pino-pretty';

export type { Logger };

/**
 * Fields that hold credentials wherever they appear (top level or one object down): API keys and
 * session tokens, passwords, webhook signing secrets, S3 keys, and presigned download URLs, whose
 * query carries X-Amz-Signature and lets anyone who reads the log fetch the file.
 */
const SECRET_FIELDS = [
  'authorization',
  'cookie',
  'password',
  // A password's SHA-1 is the password to anyone with a dictionary (the password breach check).
  'sha1',
  'secret',
  'signing_secret',
  'signingSecret',
  'token',
  'apiKey',
  'api_key',
  'key_secret',
  'secretAccessKey',
  'download_url',
  'downloadUrl',
];
export const REDACT_PATHS = [
  ...SECRET_FIELDS,
  ...SECRET_FIELDS.map((field) => `*.${field}`),
  'headers.authorization',
  'headers.cookie',
  // Fastify's request and @fastify/multipart's trace line ("Providing options to busboy") carry the request headers.
  '*.headers.authorization',
  '*.headers.cookie',
  'data.downloads.*.download_url',
  'payload.data.download_url',
  'payload.data.downloads.*.download_url',
];
/** URL fields keep their path, so a log still tells which route or object it was; only the query goes. */
const URL_PATHS = ['url', '*.url'];

/**
 * The one root logger; everything below takes `log.child({ jobId })`. Logs go to stderr so that
 * `--json` output on stdout stays a single parseable document: JSON lines with ISO times, or, on a
 * terminal, pino-pretty's readable lines. `destination` is for tests that read what is logged.
 */
export function createLogger(level: string, destination?: DestinationStream): Logger {
  const stream = destination ?? (process.stderr.isTTY ? pretty({ destination: 2, colorize: true, sync: false, singleLine: true, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' }) : pino.destination({ fd: 2, sync: false }));
  return pino(
    {
      level,
      base: { pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      redact: {
        paths: [...REDACT_PATHS, ...URL_PATHS],
        censor: (value: unknown, path: string[]) => (path[path.length - 1] === 'url' && typeof value === 'string' ? withoutQuery(value) : '[redacted]'),
      },
    },
    stream,
  );
}

export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

/** `https://host/path?X-Amz-Signature=...` becomes `https://host/path?[redacted]`. */
function withoutQuery(url: string): string {
  const at = url.indexOf('?');
  return at < 0 ? url : `${url.slice(0, at)}?[redacted]`;
}
