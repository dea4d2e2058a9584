import type { SessionsPort } from '../storage/store.js';
import { randomToken, sha256 } from './secrets.js';

/** Login sessions: a bearer token good only for creating API keys, stored as a hash, expiring. */
export class SessionStore {
  constructor(
    private readonly sessions: SessionsPort,
    private readonly ttlMs: number,
  ) {}

  /** Undefined when the account is not active (suspended while the login was checked). */
  async create(accountId: string, now: number): Promise<{ token: string; expiresAt: number } | undefined> {
    const token = `sess_${randomToken(40)}`;
    const expiresAt = now + this.ttlMs;
    return (await this.sessions.create(sha256(token), accountId, expiresAt, now)) ? { token, expiresAt } : undefined;
  }

  /**
   * The session's account, or undefined for an unknown or expired token or an account that is not
   * active: suspension deletes sessions, and this refuses any that a suspension raced past.
   */
  async accountFor(token: string | undefined, now: number): Promise<string | undefined> {
    if (!token) return undefined;
    return this.sessions.live(sha256(token), now);
  }

  /** Ends the token's session (logout); its account, or undefined when there was none. */
  async end(token: string): Promise<string | undefined> {
    return this.sessions.end(sha256(token));
  }
}
