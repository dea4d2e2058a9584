import { createHash } from 'node:crypto';

export interface GravatarProfile {
  display_name: string | null;
  profile_url: string | null;
  location: string | null;
}

/** Gravatar keys avatars by the SHA-256 of the trimmed, lower-cased address (docs.gravatar.com). */
export function gravatarHash(email: string): string {
  return createHash('sha256').update(email.trim().toLowerCase()).digest('hex');
}

/**
 * `GET <base>/profiles/<hash>`, Gravatar's REST API v3 shape; 404 means no profile. The base is the
 * remote provider setting (SLUICE_GRAVATAR_URL); nothing is asked when it is unset.
 */
export async function gravatarProfile(
  base: string,
  hash: string,
  getJson: (url: string, signal?: AbortSignal) => Promise<unknown>,
  signal?: AbortSignal,
): Promise<{ avatar_url: string; profile: GravatarProfile } | null> {
  const doc = (await getJson(`${base.replace(/\/$/, '')}/profiles/${hash}`, signal)) as Record<string, unknown> | undefined;
  if (doc === undefined || doc === null || typeof doc !== 'object') return null;
  const text = (k: string) => (typeof doc[k] === 'string' && doc[k] !== '' ? (doc[k] as string) : null);
  return {
    avatar_url: text('avatar_url') ?? `https://gravatar.com/avatar/${hash}`,
    profile: { display_name: text('display_name'), profile_url: text('profile_url'), location: text('location') },
  };
}
