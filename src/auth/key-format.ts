import { crc32 } from 'node:zlib';
import { BASE62, randomToken } from './secrets.js';

/**
 * The text of an API key: `sluice_`, 30 random base62 characters, then the CRC32 of those 30
 * characters in 6 base62 digits. A secret scanner can tell a real key from a look-alike offline, and
 * the API refuses a mistyped or made-up key before it costs a store lookup.
 *
 * Scanners: `\bsluice_[0-9A-Za-z]{36}\b`; the key is well formed when the last 6 characters are the
 * CRC-32 (IEEE, as zlib and gzip compute it) of the 30 before them, written in base62 with the digits
 * `0-9A-Za-z` (0 to 61), most significant first, padded with `0` to 6.
 *
 * Keys issued before the checksum (`sluice_` and 32 base62 characters) still authenticate: their
 * hashes are stored and nobody could be made to replace them. They cost a lookup, as before.
 */
export const KEY_PREFIX = 'sluice_';
export const KEY_RANDOM_LENGTH = 30;
export const KEY_CHECKSUM_LENGTH = 6;

export const KEY_PATTERN = /^sluice_[0-9A-Za-z]{36}$/;
const LEGACY_PATTERN = /^sluice_[0-9A-Za-z]{32}$/;

export const KEY_SHAPES = { checksummed: 'checksummed', legacy: 'legacy', malformed: 'malformed' } as const;
export type KeyShape = (typeof KEY_SHAPES)[keyof typeof KEY_SHAPES];

export function mintKey(): string {
  const random = randomToken(KEY_RANDOM_LENGTH);
  return `${KEY_PREFIX}${random}${checksum(random)}`;
}

/**
 * Which format a presented key is in; `malformed` for anything no key ever issued could be (a
 * checksum that fails included), which the caller refuses without looking it up.
 */
export function keyShape(text: string): KeyShape {
  if (KEY_PATTERN.test(text)) {
    const random = text.slice(KEY_PREFIX.length, KEY_PREFIX.length + KEY_RANDOM_LENGTH);
    return text.slice(-KEY_CHECKSUM_LENGTH) === checksum(random) ? KEY_SHAPES.checksummed : KEY_SHAPES.malformed;
  }
  return LEGACY_PATTERN.test(text) ? KEY_SHAPES.legacy : KEY_SHAPES.malformed;
}

/** The 6 base62 digits of the CRC-32 of `random` (node:zlib's, present from Node 20.15; we need 20.18). */
export function checksum(random: string): string {
  let value = crc32(random);
  let out = '';
  for (let i = 0; i < KEY_CHECKSUM_LENGTH; i++) {
    out = BASE62[value % 62] + out;
    value = Math.floor(value / 62);
  }
  return out;
}
