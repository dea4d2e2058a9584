import { describe, expect, it } from 'vitest';
import { flaggedText, ROW_FLAGS, type StoredOutput } from '../storage/job-records.js';

/** A batch output as processChunk writes it: the rows' text, their ends and their flags. */
function output(rows: readonly [text: string, flags: number][]): StoredOutput {
  const rowEnds = Buffer.alloc(rows.length * 4);
  let allText = '';
  rows.forEach(([text], i) => {
    allText += text;
    rowEnds.writeUInt32LE(allText.length, i * 4);
  });
  return { allText, rowEnds, rowFlags: Buffer.from(rows.map(([, f]) => f)), foundText: '', errorsText: '' };
}

const { found, error } = ROW_FLAGS;

describe('flaggedText', () => {
  it('cuts the flagged rows out of the batch text by their ends, whole rows only, in order', () => {
    const batch = output([
      ['a,1\r\n', found],
      ['"two\r\nlines",2\r\n', found],
      ['é,3\r\n', 0],
      ['d,4\r\n', error],
      ['e,5\r\n', found | error],
      ['f,6\r\n', found],
    ]);
    expect(flaggedText(batch, found)).toBe('a,1\r\n"two\r\nlines",2\r\ne,5\r\nf,6\r\n');
    expect(flaggedText(batch, error)).toBe('d,4\r\ne,5\r\n');
  });

  it('gives nothing for a batch with no flagged rows, and everything for one with all', () => {
    expect(flaggedText(output([['a\r\n', 0], ['b\r\n', error]]), found)).toBe('');
    expect(flaggedText(output([['a\r\n', found], ['b\r\n', found]]), found)).toBe('a\r\nb\r\n');
    expect(flaggedText(output([]), found)).toBe('');
  });

  it('reads an output written before row ends were kept from its own filtered texts', () => {
    const old: StoredOutput = { allText: 'a\r\nb\r\n', rowEnds: null, rowFlags: Buffer.from([found, error]), foundText: 'a\r\n', errorsText: 'b\r\n' };
    expect(flaggedText(old, found)).toBe('a\r\n');
    expect(flaggedText(old, error)).toBe('b\r\n');
  });
});
