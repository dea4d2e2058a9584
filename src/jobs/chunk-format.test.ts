import { describe, expect, it } from 'vitest';
import { ChunkBodyBuilder, ChunkLines, decodeChunkRow, encodeChunkRow, ROW_KINDS } from './chunk-format.js';

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

describe('ChunkLines', () => {
  it('reads each line of a body as the split wrote it, multi-byte characters included', () => {
    const builder = new ChunkBodyBuilder();
    const lines = ['[0,"zoë@example.com",["zoë@example.com"]]', '[2,"invalid_email",["名前"]]', '[1,"a@b.io",["a@b.io","😀"]]'];
    for (const line of lines) builder.append(line);
    const read = new ChunkLines(builder.take());
    expect(read.count).toBe(3);
    expect([0, 1, 2].map((i) => read.line(i))).toEqual(lines);
  });

  it('counts a last line without a line end, and no line in an empty body', () => {
    const read = new ChunkLines(Buffer.from('first\n\nlast'));
    expect(read.count).toBe(3);
    expect([read.line(0), read.line(1), read.line(2)]).toEqual(['first', '', 'last']);
    expect(new ChunkLines(Buffer.alloc(0)).count).toBe(0);
  });

  it('refuses a line past the end instead of handing back an empty row', () => {
    const read = new ChunkLines(Buffer.from('one\n'));
    expect(() => read.line(1)).toThrow(RangeError);
    expect(() => read.line(-1)).toThrow(RangeError);
  });
});
