import { describe, expect, it } from 'vitest';
import { readCsvRows } from './csv-reader.js';
import { csvLine, escapeFormula } from './csv-writer.js';

describe('csvLine', () => {
  const cases: [cells: string[], line: string][] = [
    [['a', 'b', 'c'], 'a,b,c\n'],
    [[], '\n'],
    [[''], '\n'],
    [['', ''], ',\n'],
    [['a,b'], '"a,b"\n'],
    [['say "hi"'], '"say ""hi"""\n'],
    [['"'], '""""\n'],
    [['line1\nline2'], '"line1\nline2"\n'],
    [['cr\rhere'], '"cr\rhere"\n'],
    [['crlf\r\n'], '"crlf\r\n"\n'],
    [[' leading'], '" leading"\n'],
    [['trailing '], '"trailing "\n'],
    [['\ttab'], '"\ttab"\n'],
    [['in side'], 'in side\n'],
    [["it's"], "it's\n"],
    [['naïve', '日本', '😀'], 'naïve,日本,😀\n'],
    [['=1+1'], '=1+1\n'],
  ];
  it.each(cases)('%j -> %j', (cells, line) => {
    expect(csvLine(cells)).toBe(line);
  });
});

describe('escapeFormula', () => {
  const cases: [cell: string, escaped: string][] = [
    ['=1+1', "'=1+1"],
    ['=HYPERLINK("http://evil.example","click")', '\'=HYPERLINK("http://evil.example","click")'],
    ['+cmd', "'+cmd"],
    ['-2+3', "'-2+3"],
    ['@SUM(A1:A9)', "'@SUM(A1:A9)"],
    ['\tx', "'\tx"],
    ['\rx', "'\rx"],
    ['-', "'-"],
    ['+', "'+"],
    ['+44 20 7946 0958', "'+44 20 7946 0958"],
    ['+1 (555) 010-0199', "'+1 (555) 010-0199"],
    ['-1e5', "'-1e5"],
    ['-12.5', '-12.5'],
    ['+44', '+44'],
    ['+442079460958', '+442079460958'],
    ['-0.5', '-0.5'],
    ['-.5', '-.5'],
    ['+7.', '+7.'],
    ['12', '12'],
    ['john@example.com', 'john@example.com'],
    ['a=b', 'a=b'],
    [' =1+1', ' =1+1'],
    ['', ''],
    ["'=already", "'=already"],
  ];
  it.each(cases)('%j -> %j', (cell, escaped) => {
    expect(escapeFormula(cell)).toBe(escaped);
  });
});

describe('csvLine and readCsvRows round trip', () => {
  async function readBack(text: string): Promise<string[][]> {
    const rows: string[][] = [];
    const source = (async function* () {
      yield Buffer.from(text, 'utf8');
    })();
    for await (const batch of readCsvRows(source, { maxLineBytes: 4096 })) rows.push(...batch);
    return rows;
  }

  const nasty = [
    ['plain', 'with,comma', 'with "quotes"', '"', '""', 'multi\nline', ' padded ', ''],
    ['=1+1', '-12.5', '@x', '\tlead', 'trail\t', ',', ',,', '"a","b"'],
    ['naïve', '日本語', '😀 emoji', '\uFEFFbom', 'back\\slash', "'quote", '\n', 'x\n\ny'],
  ];

  it('nasty cells come back the same', async () => {
    const text = nasty.map(csvLine).join('');
    expect(await readBack(text)).toEqual(nasty);
  });

  it('nasty cells come back the same after formula escaping, with the escape visible', async () => {
    const escaped = nasty.map((row) => row.map(escapeFormula));
    expect(await readBack(escaped.map(csvLine).join(''))).toEqual(escaped);
  });

  it('a CR or CRLF inside a quoted cell comes back exactly: only record ends are unified', async () => {
    expect(await readBack(csvLine(['a\r\nb', 'c\rd']))).toEqual([['a\r\nb', 'c\rd']]);
  });
});
