import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { AppError, ERROR_CODES } from '../shared/errors.js';

/** scrypt with N=2^15: about 50 ms a check here, which is what makes a stolen hash expensive. */
const PARAMS = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 } as const;
const KEY_LENGTH = 32;

/**
 * At most `concurrency` functions run at once; up to `queue` more wait their turn, and beyond that
 * a bounded call is refused with `server_busy` rather than left to wait without end.
 */
export class HashGate {
  private running = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly concurrency: number,
    readonly queue: number,
  ) {}

  async run<T>(fn: () => Promise<T>, bounded = true): Promise<T> {
    if (this.running >= this.concurrency) {
      if (bounded && this.waiting.length >= this.queue) {
        throw new AppError(ERROR_CODES.serverBusy, 'Too many logins at once; try again shortly', { retryable: true });
      }
      // A finishing run hands its place over (see finally), so `running` already counts this one.
      await new Promise<void>((resolve) => this.waiting.push(resolve));
    } else this.running++;
    try {
      return await fn();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.running--;
    }
  }
}

/**
 * Every scrypt of this process passes here. scrypt runs on libuv's pool of 4 threads, which file
 * I/O and DNS share: with logins free to take all four, a presigned download took 13.55 s instead
 * of 3.5 ms and /readyz 3.9 s. Two at once leave two threads free; 32 waiting is about 0.8 s of
 * hashing (about 50 ms each), past which a login is told to come back rather than queue forever.
 */
export const PASSWORD_HASHES = new HashGate(2, 32);

function derive(password: string, salt: Buffer, params: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scrypt(password.normalize('NFKC'), salt, KEY_LENGTH, params, (err, key) => (err ? reject(err) : resolve(key)));
  });
}

/** `scrypt$N$r$p$salt$hash`, so the cost can be raised later without breaking stored hashes. */
export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  // Account creation (the CLI) is never refused: it waits its turn however long the queue.
  const hash = await PASSWORD_HASHES.run(() => derive(password, salt, PARAMS), false);
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Throws `server_busy` when more logins wait for a hash than PASSWORD_HASHES queues. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const [scheme, n, r, p, salt, hash] = stored.split('$');
  if (scheme !== 'scrypt' || !salt || !hash) return false;
  const expected = Buffer.from(hash, 'base64url');
  const params = { N: Number(n), r: Number(r), p: Number(p), maxmem: PARAMS.maxmem };
  const actual = await PASSWORD_HASHES.run(() => derive(password, Buffer.from(salt, 'base64url'), params));
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}
