/**
 * The set of keys seen so far in one job's split, for in-file dedupe. It stores a 127-bit hash of
 * each key (16 bytes a key, about 32 MB at a million keys with the table half full) instead of the
 * strings (about 100 MB), so memory stays flat in the row width. Two keys are confused only if
 * all four independent 32-bit lanes collide: about n^2 / 2^128, i.e. 3e-27 at a million keys.
 */
export class KeySet {
  private table: Uint32Array;
  private mask: number;
  private count = 0;

  constructor(initialCapacity = 1 << 16) {
    let capacity = 1;
    while (capacity < initialCapacity) capacity <<= 1;
    this.table = new Uint32Array(capacity * 4);
    this.mask = capacity - 1;
  }

  get size(): number {
    return this.count;
  }

  /** Adds the key; true when it was not there before. */
  add(key: string): boolean {
    hash128(key, LANES);
    if (this.count * 2 >= this.mask + 1) this.grow();
    return insert(this.table, this.mask, LANES[0]!, LANES[1]!, LANES[2]!, LANES[3]!) && ++this.count > 0;
  }

  private grow(): void {
    const old = this.table;
    const capacity = (this.mask + 1) * 2;
    this.table = new Uint32Array(capacity * 4);
    this.mask = capacity - 1;
    for (let i = 0; i < old.length; i += 4) {
      if (old[i] !== 0) insert(this.table, this.mask, old[i]!, old[i + 1]!, old[i + 2]!, old[i + 3]!);
    }
  }
}

const LANES = new Uint32Array(4);

function insert(table: Uint32Array, mask: number, a: number, b: number, c: number, d: number): boolean {
  let slot = b & mask;
  for (;;) {
    const at = slot * 4;
    const stored = table[at]!;
    if (stored === 0) {
      table[at] = a;
      table[at + 1] = b;
      table[at + 2] = c;
      table[at + 3] = d;
      return true;
    }
    if (stored === a && table[at + 1] === b && table[at + 2] === c && table[at + 3] === d) return false;
    slot = (slot + 1) & mask;
  }
}

/** Four murmur3-style lanes with distinct seeds; lane 0 is forced odd so 0 can mean "empty". */
function hash128(key: string, out: Uint32Array): void {
  let h1 = 0x9747b28c;
  let h2 = 0x85ebca6b;
  let h3 = 0xc2b2ae35;
  let h4 = 0x27d4eb2f;
  for (let i = 0; i < key.length; i++) {
    const k = Math.imul(key.charCodeAt(i), 0xcc9e2d51);
    h1 = Math.imul((h1 ^ k) << 13 | (h1 ^ k) >>> 19, 5) + 0xe6546b64;
    h2 = Math.imul(h2 ^ (k >>> 7), 0x1b873593) ^ (h2 >>> 15);
    h3 = Math.imul((h3 + k) << 7 | (h3 + k) >>> 25, 0x165667b1);
    h4 = Math.imul(h4 ^ k ^ (h4 >>> 13), 0x85ebca77) + i;
  }
  out[0] = fmix(h1 ^ key.length) | 1;
  out[1] = fmix(h2 ^ key.length);
  out[2] = fmix(h3 ^ key.length);
  out[3] = fmix(h4 ^ key.length);
}

function fmix(h: number): number {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}
