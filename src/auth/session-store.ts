import type { SessionsPort } from '../storage/store.js';
import { randomToken, sha256 } from './secrets.js';

/** Login sessions: a bearer token good only for creating API keys, stored as a hash, expiring. */
export class SessionStore {
  constructor(
    private readonly sessions: SessionsPort,
    private readonly ttlMs: number,
  ) {}

  async create(accountId: string, now: number): Promise<{ token: string; expiresAt: number }> {
    const token = `sess_${randomToken(40)}`;
    const expiresAt = now + this.ttlMs;
    await this.sessions.create(sha256(token), accountId, expiresAt, now);
    return { token, expiresAt };
  }

  /** The session's account, or undefined for an unknown or expired token. */
  async accountFor(token: string | undefined, now: number): Promise<string | undefined> {
    if (!token) return undefined;
    const row = await this.sessions.get(sha256(token));
    return row && row.expiresAt > now ? row.accountId : undefined;
  }
}
