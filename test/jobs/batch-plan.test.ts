import { describe, expect, it } from 'vitest';
import { batchEnd } from '../../src/jobs/batch-plan.js';
import { ChunkBodyBuilder, ChunkLines, encodeChunkRow, ROW_KINDS } from '../../src/jobs/chunk-format.js';

/** The batches a whole pass is cut into, as [start, end) pairs. */
function batches(sizes: readonly number[], maxRows: number, maxBytes: number, from = 0): [number, number][] {
  const cut: [number, number][] = [];
  for (let cursor = from; cursor < sizes.length; ) {
    const end = batchEnd((i) => sizes[i]!, cursor, sizes.length, maxRows, maxBytes);
    cut.push([cursor, end]);
    cursor = end;
  }
  return cut;
}

describe('batchEnd', () => {
  it.each([
    { name: 'narrow rows: the row count ends the batch', sizes: [10, 10, 10, 10, 10], maxRows: 2, maxBytes: 1000, want: [[0, 2], [2, 4], [4, 5]] },
    { name: 'wide rows: the byte budget ends the batch before the row that would pass it', sizes: [400, 400, 400, 400, 400], maxRows: 1000, maxBytes: 1000, want: [[0, 2], [2, 4], [4, 5]] },
    { name: 'a batch may fill its budget exactly', sizes: [500, 500, 500], maxRows: 1000, maxBytes: 1000, want: [[0, 2], [2, 3]] },
    { name: 'a row over the budget alone still makes a batch of one', sizes: [5000, 10, 5000, 10], maxRows: 1000, maxBytes: 1000, want: [[0, 1], [1, 2], [2, 3], [3, 4]] },
    { name: 'mixed widths', sizes: [10, 900, 10, 10, 10, 10], maxRows: 3, maxBytes: 1000, want: [[0, 3], [3, 6]] },
  ])('$name', ({ sizes, maxRows, maxBytes, want }) => {
    const cut = batches(sizes, maxRows, maxBytes);
    expect(cut).toEqual(want);
    for (const [start, end] of cut) {
      const bytes = sizes.slice(start, end).reduce((a, b) => a + b, 0);
      expect(end - start === 1 || bytes <= maxBytes).toBe(true);
    }
  });

  it('a resume from any committed cursor cuts the rest exactly as the uninterrupted run did', () => {
    const sizes = Array.from({ length: 200 }, (_, i) => 50 + ((i * 7919) % 900));
    const whole = batches(sizes, 16, 2048);
    for (const [start] of whole) expect(batches(sizes, 16, 2048, start)).toEqual(whole.filter(([s]) => s >= start));
  });

  it('1,000 rows of 21,800 cells are never one batch: each holds at most the byte budget', () => {
    const budget = 1024 * 1024;
    const body = new ChunkBodyBuilder();
    const wide = Array.from({ length: 21_800 }, () => 'xx');
    const line = encodeChunkRow([{ kind: ROW_KINDS.invalid, value: 'invalid_email' }], wide);
    for (let i = 0; i < 1_000; i++) body.append(line);
    const lines = new ChunkLines(body.take());
    expect(lines.byteLength(0)).toBe(Buffer.byteLength(line));
    const end = batchEnd((i) => lines.byteLength(i), 0, lines.count, 1_000, budget);
    expect(end).toBe(Math.floor(budget / Buffer.byteLength(line)));
    expect(end).toBeLessThan(1_000);
  });
});

describe('chunk sizes in bytes', () => {
  it('ChunkBodyBuilder counts the bytes of its lines, line ends included, and starts again at take()', () => {
    const body = new ChunkBodyBuilder(4);
    body.append('é');
    body.append('abc');
    expect(body.bytes).toBe(2 + 1 + 3 + 1);
    body.take();
    expect(body.bytes).toBe(0);
  });

  it('ChunkLines tells each line’s byte length without decoding it', () => {
    const lines = new ChunkLines(Buffer.from('ab\n\nédf\nx'));
    expect([0, 1, 2, 3].map((i) => lines.byteLength(i))).toEqual([2, 0, 4, 1]);
    expect(() => lines.byteLength(4)).toThrow(RangeError);
  });
});
