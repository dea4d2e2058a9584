import { describe, expect, it } from 'vitest';
import { ChunkBodyBuilder, decodeChunkRow, encodeChunkRow, ROW_KINDS } from './chunk-format.js';

describe('ChunkBodyBuilder', () => {
  it('gives the lines joined by line ends, past its first capacity and in multi-byte UTF-8', () => {
    const builder = new ChunkBodyBuilder(16);
    const lines = Array.from({ length: 200 }, (_, i) => encodeChunkRow([{ kind: ROW_KINDS.lookup, value: `zoë.${i}@example.com` }], [`zoë.${i}@example.com`, '名前', '😀']));
    for (const line of lines) builder.append(line);
    expect(builder.rows).toBe(200);
    const body = builder.take();
    expect(body.toString('utf8')).toBe(`${lines.join('\n')}\n`);
    expect(decodeChunkRow(body.toString('utf8').split('\n')[199]!)).toEqual({ kind: ROW_KINDS.lookup, value: 'zoë.199@example.com', cells: ['zoë.199@example.com', '名前', '😀'], more: undefined });
  });

  it('starts empty again after take(), without touching the body it handed out', () => {
    const builder = new ChunkBodyBuilder(8);
    builder.append('first chunk line');
    const first = builder.take();
    expect(builder.rows).toBe(0);
    builder.append('second');
    expect(builder.take().toString()).toBe('second\n');
    expect(first.toString()).toBe('first chunk line\n');
    expect(builder.take().length).toBe(0);
  });
});
