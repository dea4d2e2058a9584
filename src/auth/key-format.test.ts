import { describe, expect, it } from 'vitest';
import { checksum, KEY_PATTERN, KEY_SHAPES, keyShape, mintKey } from './key-format.js';

/**
 * CRC-32/IEEE bit by bit, with no table: an independent reference for the checksum, written from
 * the definition (reflected, polynomial 0xEDB88320, initial and final XOR 0xFFFFFFFF).
 */
function referenceCrc32(text: string): number {
  let crc = 0xffffffff;
  for (const byte of Buffer.from(text, 'latin1')) {
    crc ^= byte;
    for (let bit = 0; bit < 8; bit++) crc = crc & 1 ? (crc >>> 1) ^ 0xedb88320 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** The value of 6 base62 digits, written out the way the README tells a scanner to read them. */
function fromBase62(digits: string): number {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  return [...digits].reduce((value, digit) => value * 62 + alphabet.indexOf(digit), 0);
}

describe('the API key checksum', () => {
  it('agrees with the reference CRC-32 on its published check value', () => {
    // "123456789" -> 0xCBF43926 is the check value every CRC-32/IEEE catalogue gives.
    expect(referenceCrc32('123456789')).toBe(0xcbf43926);
    expect(fromBase62(checksum('123456789'))).toBe(0xcbf43926);
  });

  it.each([
    ['000000000000000000000000000000'],
    ['zzzzzzzzzzzzzzzzzzzzzzzzzzzzzz'],
    ['aZ3kq9XbT0pLw2Rm8YcV5nHe7sJd1F'],
  ])('is the base62 CRC-32 of %s, 6 digits, zero-padded', (random) => {
    const digits = checksum(random);
    expect(digits).toMatch(/^[0-9A-Za-z]{6}$/);
    expect(fromBase62(digits)).toBe(referenceCrc32(random));
  });

  it('pads a small CRC with leading zeros', () => {
    // Found by search so the case is real: some 30-character text whose CRC-32 is below 62^4.
    let random = '';
    for (let n = 0; ; n++) {
      random = n.toString(36).padStart(30, '0');
      if (referenceCrc32(random) < 62 ** 4) break;
    }
    expect(checksum(random).slice(0, 2)).toBe('00');
    expect(fromBase62(checksum(random))).toBe(referenceCrc32(random));
  });
});

describe('keyShape', () => {
  it('takes every freshly minted key as checksummed, and each matches the documented pattern', () => {
    for (let i = 0; i < 200; i++) {
      const key = mintKey();
      expect(key).toMatch(KEY_PATTERN);
      expect(key).toMatch(/^sluice_[0-9A-Za-z]{36}$/);
      expect(keyShape(key)).toBe(KEY_SHAPES.checksummed);
    }
  });

  it('refuses a key with any one character of its random part or checksum changed', () => {
    const key = mintKey();
    for (let i = 'sluice_'.length; i < key.length; i++) {
      const swapped = key[i] === 'a' ? 'b' : 'a';
      expect(keyShape(key.slice(0, i) + swapped + key.slice(i + 1)), `changed at ${i}`).toBe(KEY_SHAPES.malformed);
    }
  });

  it.each([
    ['a key of the format before the checksum', `sluice_${'A1b2C3d4'.repeat(4)}`, KEY_SHAPES.legacy],
    ['no prefix', 'A1b2C3d4'.repeat(5), KEY_SHAPES.malformed],
    ['another prefix', `sluicx_${'A1b2C3d4'.repeat(4)}`, KEY_SHAPES.malformed],
    ['one character short of the old format', `sluice_${'A1b2C3d4'.repeat(4).slice(1)}`, KEY_SHAPES.malformed],
    ['a character outside base62', `sluice_${'A1b2C3d4'.repeat(4).slice(1)}-`, KEY_SHAPES.malformed],
    ['a trailing newline', `sluice_${'A1b2C3d4'.repeat(4)}\n`, KEY_SHAPES.malformed],
    ['the bare prefix', 'sluice_', KEY_SHAPES.malformed],
    ['a session token', `sess_${'A1b2C3d4'.repeat(5)}`, KEY_SHAPES.malformed],
  ])('%s is %s', (_what, text, shape) => {
    expect(keyShape(text)).toBe(shape);
  });
});
