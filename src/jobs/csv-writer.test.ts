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
  const escaped: string[] = [
    '=1+1',
    '=HYPERLINK("http://evil.example","click")',
    '+cmd',
    "+1+cmd|' /C calc'!A0",
    '-1+1',
    '-2+3',
    '+ 1)',
    '@SUM(A1)',
    '@SUM(A1:A9)',
    '\tx',
    '\t-12',
    '\rx',
    '\0=1',
    '-',
    '+',
    '+1-2',
    '+12 34 5',
    '+49 30 1234567 ext. 12',
    '+49 30 1234567 ',
    '+(415) 816-6557',
    '-49 30 1234567',
    '+1e5+1',
    '-1..2.3',
    ' =1+1',
    '  @x',
    '\u00A0=1',
    '\u3000+cmd',
    '\uFF1D1+1',
    '\uFF0B49 30 1234567',
    '\uFF0D12',
    '\uFF20SUM(A1)',
  ];
  it.each(escaped)('%j is escaped with a leading quote', (cell) => {
    expect(escapeFormula(cell)).toBe(`'${cell}`);
  });

  const kept: string[] = [
    '-12',
    '+3.5',
    '-12.5',
    '-0.5',
    '-.5',
    '+7.',
    '-1,5',
    '-1e5',
    '+2.5E-3',
    '+44',
    '+442079460958',
    '+4930123456',
    '+49 30 1234567',
    '+1 (415) 816-6557',
    '+44-20-7946-0958',
    '+33.1.23.45.67.89',
    ' +49 30 1234567',
    ' -12',
    '12',
    '1e5',
    'john@example.com',
    'a=b',
    '',
    "'=already",
    '(415) 816-6557',
  ];
  it.each(kept)('%j is left as it is', (cell) => {
    expect(escapeFormula(cell)).toBe(cell);
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
