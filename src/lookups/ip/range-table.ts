import type { IpFamily } from '../../shared/ip-keys.js';

/**
 * Longest-prefix (innermost-range) match over one address family in memory. Nested ranges are
 * flattened once into disjoint segments, each naming its innermost range, so that a lookup is one
 * binary search over fixed-width keys (1 32-bit word per IPv4 key, 4 per IPv6 key): about 20 steps
 * for a million prefixes, whatever their lengths. `parents` gives each range's enclosing range,
 * so every covering prefix of an address is a walk up from its innermost one.
 */
export class RangeTable {
  private constructor(
    private readonly words: 1 | 4,
    private readonly starts: Uint32Array,
    private readonly items: Int32Array,
    readonly parents: Int32Array,
  ) {}

  /** Ranges given as first and last address; overlapping ranges that do not nest are clipped to their encloser. */
  static build(family: IpFamily, count: number, firstOf: (i: number) => bigint, lastOf: (i: number) => bigint): RangeTable {
    const words = family === 4 ? 1 : 4;
    const max = family === 4 ? 0xffffffffn : (1n << 128n) - 1n;
    const first: bigint[] = new Array<bigint>(count);
    const last: bigint[] = new Array<bigint>(count);
    for (let i = 0; i < count; i++) {
      first[i] = firstOf(i);
      last[i] = lastOf(i);
    }
    const order = Array.from({ length: count }, (_, i) => i);
    order.sort((a, b) => (first[a]! < first[b]! ? -1 : first[a]! > first[b]! ? 1 : last[a]! > last[b]! ? -1 : last[a]! < last[b]! ? 1 : a - b));
    const segStarts: bigint[] = [];
    const segItems: number[] = [];
    const emit = (start: bigint, item: number) => {
      const n = segStarts.length;
      if (n > 0 && segStarts[n - 1] === start) {
        segItems[n - 1] = item;
        if (n > 1 && segItems[n - 2] === item) {
          segStarts.pop();
          segItems.pop();
        }
        return;
      }
      if (n > 0 && segItems[n - 1] === item) return;
      segStarts.push(start);
      segItems.push(item);
    };
    const parents = new Int32Array(count).fill(-1);
    const stack: number[] = [];
    const closeBefore = (at: bigint) => {
      while (stack.length > 0 && last[stack[stack.length - 1]!]! < at) {
        const top = stack.pop()!;
        const after = last[top]! + 1n;
        if (after <= max) emit(after, stack.length > 0 ? stack[stack.length - 1]! : -1);
      }
    };
    emit(0n, -1);
    for (const i of order) {
      closeBefore(first[i]!);
      const encloser = stack.length > 0 ? stack[stack.length - 1]! : -1;
      parents[i] = encloser;
      if (encloser >= 0 && last[i]! > last[encloser]!) last[i] = last[encloser]!;
      emit(first[i]!, i);
      stack.push(i);
    }
    closeBefore(max + 1n);
    const starts = new Uint32Array(segStarts.length * words);
    segStarts.forEach((s, n) => {
      for (let w = words - 1; w >= 0; w--) {
        starts[n * words + w] = Number(s & 0xffffffffn);
        s >>= 32n;
      }
    });
    return new RangeTable(words, starts, Int32Array.from(segItems), parents);
  }

  /** The innermost range holding the address (its key as big-endian 32-bit words), or -1. */
  find(key: Uint32Array): number {
    const { words, starts } = this;
    let lo = 0;
    let hi = starts.length / words - 1;
    let at = -1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      if (compare(starts, mid * words, key, words) <= 0) {
        at = mid;
        lo = mid + 1;
      } else hi = mid - 1;
    }
    return at < 0 ? -1 : this.items[at]!;
  }

  /** The range and every range enclosing it, innermost first. */
  chain(item: number): number[] {
    const out: number[] = [];
    for (let i = item; i >= 0; i = this.parents[i]!) out.push(i);
    return out;
  }
}

function compare(starts: Uint32Array, at: number, key: Uint32Array, words: number): number {
  for (let w = 0; w < words; w++) {
    const a = starts[at + w]!;
    const b = key[w]!;
    if (a !== b) return a < b ? -1 : 1;
  }
  return 0;
}

/** An address key (4 or 16 bytes) as the big-endian 32-bit words `find` takes. */
export function keyWords(key: Uint8Array): Uint32Array {
  const out = new Uint32Array(key.length / 4);
  for (let w = 0; w < out.length; w++) out[w] = ((key[w * 4]! << 24) | (key[w * 4 + 1]! << 16) | (key[w * 4 + 2]! << 8) | key[w * 4 + 3]!) >>> 0;
  return out;
}
