import { describe, expect, it } from 'vitest';
import { AppError } from '../shared/errors.js';
import { readCsvRows, type CsvReadOptions } from './csv-reader.js';

const LIMITS: CsvReadOptions = { maxLineBytes: 1024 };

async function* chunksOf(input: Buffer, size = input.length || 1): AsyncGenerator<Buffer> {
  for (let at = 0; at < input.length; at += size) yield input.subarray(at, at + size);
}

async function readAll(source: AsyncIterable<Buffer | Uint8Array>, options: CsvReadOptions = LIMITS): Promise<string[][]> {
  const rows: string[][] = [];
  for await (const batch of readCsvRows(source, options)) rows.push(...batch);
  return rows;
}

function read(input: string | Buffer, chunkSize?: number, options?: CsvReadOptions): Promise<string[][]> {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : input;
  return readAll(chunksOf(bytes, chunkSize), options);
}

async function failure(promise: Promise<unknown>): Promise<AppError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(AppError);
  return error as AppError;
}

describe('readCsvRows: rows', () => {
  const cases: [name: string, input: string, rows: string[][]][] = [
    ['LF line ends', 'a,b\n1,2\n', [['a', 'b'], ['1', '2']]],
    ['CRLF line ends', 'a,b\r\n1,2\r\n', [['a', 'b'], ['1', '2']]],
    ['lone CR line ends', 'a,b\r1,2\r', [['a', 'b'], ['1', '2']]],
    ['mixed line ends in one file', 'a\r\nb\nc\rd', [['a'], ['b'], ['c'], ['d']]],
    ['no trailing newline', 'a,b\n1,2', [['a', 'b'], ['1', '2']]],
    ['a leading BOM is dropped', '\uFEFFemail\nx@y.com\n', [['email'], ['x@y.com']]],
    ['a BOM later in the file is data', 'a\n\uFEFFb\n', [['a'], ['\uFEFFb']]],
    ['quoted comma', '"a,b",c\n', [['a,b', 'c']]],
    ['doubled quotes', '"say ""hi""",x\n', [['say "hi"', 'x']]],
    ['quoted LF', '"line1\nline2",x\n', [['line1\nline2', 'x']]],
    ['quoted CRLF is kept as data', '"line1\r\nline2",x\r\n', [['line1\r\nline2', 'x']]],
    ['quoted lone CR is kept as data', '"line1\rline2",x\n', [['line1\rline2', 'x']]],
    ['empty quoted field', '"",x\n', [['', 'x']]],
    ['a quote inside an unquoted field is data', 'ab"c,d\n', [['ab"c', 'd']]],
    ['blank lines are skipped', 'a\n\n\r\nb\n\n', [['a'], ['b']]],
    ['whitespace-only lines are skipped', 'a\n   \n\t\nb\n', [['a'], ['b']]],
    ['a row of empty cells is kept', 'a,b\n,\n', [['a', 'b'], ['', '']]],
    ['cells keep their spaces', ' a , b \n', [[' a ', ' b ']]],
    ['header-only file', 'email,name\n', [['email', 'name']]],
    ['whitespace-only file has no rows', '  \n\t\r\n \n', []],
    ['ragged rows are kept as they are', 'a,b,c\n1\n1,2,3,4\n', [['a', 'b', 'c'], ['1'], ['1', '2', '3', '4']]],
    ['multi-byte UTF-8', 'naïve,日本,😀\n', [['naïve', '日本', '😀']]],
  ];
  it.each(cases)('%s', async (_name, input, rows) => {
    expect(await read(input)).toEqual(rows);
  });

  // The csv-spectrum cases (github.com/max-mapper/csv-spectrum), inputs and expectations inline.
  const spectrum: [name: string, input: string, rows: string[][]][] = [
    ['comma_in_quotes', 'first,last,address,city,zip\nJohn,Doe,120 any st.,"Anytown, WW",08123\n', [
      ['first', 'last', 'address', 'city', 'zip'],
      ['John', 'Doe', '120 any st.', 'Anytown, WW', '08123'],
    ]],
    ['empty', 'a,b,c\n1,"",""\n2,3,4\n', [['a', 'b', 'c'], ['1', '', ''], ['2', '3', '4']]],
    ['empty_crlf', 'a,b,c\r\n1,"",""\r\n2,3,4\r\n', [['a', 'b', 'c'], ['1', '', ''], ['2', '3', '4']]],
    ['escaped_quotes', 'a,b\n1,"ha ""ha"" ha"\n3,4\n', [['a', 'b'], ['1', 'ha "ha" ha'], ['3', '4']]],
    ['json', 'key,val\n1,"{""type"": ""Point"", ""coordinates"": [102.0, 0.5]}"\n', [
      ['key', 'val'],
      ['1', '{"type": "Point", "coordinates": [102.0, 0.5]}'],
    ]],
    ['newlines', 'a,b,c\n1,2,3\n"Once upon \na time",5,6\n7,8,9\n', [
      ['a', 'b', 'c'], ['1', '2', '3'], ['Once upon \na time', '5', '6'], ['7', '8', '9'],
    ]],
    ['newlines_crlf', 'a,b,c\r\n1,2,3\r\n"Once upon \r\na time",5,6\r\n7,8,9\r\n', [
      ['a', 'b', 'c'], ['1', '2', '3'], ['Once upon \r\na time', '5', '6'], ['7', '8', '9'],
    ]],
    ['quotes_and_newlines', 'a,b\n1,"ha \n""ha"" \nha"\n3,4\n', [['a', 'b'], ['1', 'ha \n"ha" \nha'], ['3', '4']]],
    ['simple', 'a,b,c\n1,2,3\n', [['a', 'b', 'c'], ['1', '2', '3']]],
    ['simple_crlf', 'a,b,c\r\n1,2,3\r\n', [['a', 'b', 'c'], ['1', '2', '3']]],
    ['utf8', 'a,b,c\n1,2,3\n4,5,ʤ\n', [['a', 'b', 'c'], ['1', '2', '3'], ['4', '5', 'ʤ']]],
    ['location_coordinates', 'Location,Coordinates\nRome,"41.9028, 12.4964"\n', [
      ['Location', 'Coordinates'], ['Rome', '41.9028, 12.4964'],
    ]],
  ];
  it.each(spectrum)('csv-spectrum %s', async (_name, input, rows) => {
    expect(await read(input)).toEqual(rows);
  });

  const tricky =
    '\uFEFFemail,note\r\n"a@b.c","x,""y""\r\nz"\r\n\r\nb@c.d,ünï😀\rc@d.e,"""q"""\n' +
    '"e@f.g" ,tail\n\n"h@i.j",""\r';
  const trickyRows = [
    ['email', 'note'],
    ['a@b.c', 'x,"y"\r\nz'],
    ['b@c.d', 'ünï😀'],
    ['c@d.e', '"q"'],
    ['e@f.g', 'tail'],
    ['h@i.j', ''],
  ];

  it('a tricky file gives the same rows whatever the chunk size, parsing at every byte', async () => {
    const bytes = Buffer.from(tricky, 'utf8');
    expect(await read(bytes)).toEqual(trickyRows);
    for (const chunkSize of [1, 2, 3, 5, 7, 11, 64]) {
      expect(await read(bytes, chunkSize, { maxLineBytes: 1024, batchChars: 1 }), `chunk ${chunkSize}`).toEqual(trickyRows);
      expect(await read(bytes, chunkSize, { maxLineBytes: 1024, batchChars: 4 }), `chunk ${chunkSize}`).toEqual(trickyRows);
    }
  });

  it('every split of the tricky file into two chunks gives the same rows', async () => {
    const bytes = Buffer.from(tricky, 'utf8');
    for (let at = 0; at <= bytes.length; at++) {
      const source = (async function* () {
        yield bytes.subarray(0, at);
        yield bytes.subarray(at);
      })();
      expect(await readAll(source, { maxLineBytes: 1024, batchChars: 1 }), `split at ${at}`).toEqual(trickyRows);
    }
  });

  it('accepts Uint8Array chunks as well as Buffers', async () => {
    const bytes = new TextEncoder().encode('a,b\n1,2\n');
    const source = (async function* () {
      yield bytes.subarray(0, 3);
      yield bytes.subarray(3);
    })();
    expect(await readAll(source)).toEqual([['a', 'b'], ['1', '2']]);
  });

  it('yields rows in batches, not one by one', async () => {
    const input = Buffer.from('email\n' + 'someone@example.com\n'.repeat(20_000));
    const sizes: number[] = [];
    for await (const batch of readCsvRows(chunksOf(input, 16 * 1024), { maxLineBytes: 1024 })) sizes.push(batch.length);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(20_001);
    expect(sizes.length).toBeGreaterThan(1);
    expect(Math.max(...sizes)).toBeLessThan(10_000);
    expect(Math.min(...sizes.slice(0, -1))).toBeGreaterThan(100);
  });

  it('a multi-byte character split across two chunks is valid', async () => {
    const bytes = Buffer.from('name\nJosé😀\n', 'utf8');
    const eAcute = bytes.indexOf(0xc3);
    const emoji = bytes.indexOf(0xf0);
    for (const at of [eAcute + 1, emoji + 1, emoji + 2, emoji + 3]) {
      const source = (async function* () {
        yield bytes.subarray(0, at);
        yield bytes.subarray(at);
      })();
      expect(await readAll(source)).toEqual([['name'], ['José😀']]);
    }
  });
});

describe('readCsvRows: rejected files', () => {
  const cases: [name: string, input: Buffer, code: string][] = [
    ['zero bytes', Buffer.alloc(0), 'empty_file'],
    ['only a BOM', Buffer.from([0xef, 0xbb, 0xbf]), 'empty_file'],
    ['gzip', Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00]), 'compressed_file'],
    ['gzip magic alone', Buffer.from([0x1f, 0x8b]), 'compressed_file'],
    ['zip (xlsx)', Buffer.from('PK\x03\x04\x14\x00\x06\x00', 'latin1'), 'compressed_file'],
    ['NUL in the first bytes', Buffer.from('a,b\n\x00\x01\x02\n', 'latin1'), 'binary_file'],
    ['NUL far into the file', Buffer.concat([Buffer.from('a,b\n'.repeat(10_000)), Buffer.from([0])]), 'binary_file'],
    ['UTF-8 beside bytes invalid in it', Buffer.concat([Buffer.from('name\nJosé\nJos'), Buffer.from([0xe9, 0x0a])]), 'invalid_utf8'],
    ['UTF-16 LE without a BOM', Buffer.from('name,city\nJosé,Köln\n', 'utf16le'), 'utf16_without_bom'],
    ['UTF-16 BE without a BOM', Buffer.from('name,city\nJosé,Köln\n', 'utf16le').swap16(), 'utf16_without_bom'],
    ['UTF-16 LE holding a NUL character', Buffer.from('\uFEFFa,b\n\0\n', 'utf16le'), 'binary_file'],
    ['UTF-16 LE with a lone surrogate', Buffer.from('\uFEFFa\n\uD800\n', 'utf16le'), 'invalid_utf16'],
    ['UTF-16 LE with an odd byte count', Buffer.concat([Buffer.from('\uFEFFa\n', 'utf16le'), Buffer.from([0x62])]), 'invalid_utf16'],
    ['only a UTF-16 BOM', Buffer.from([0xff, 0xfe]), 'empty_file'],
    ['Windows-1252 with a NUL', Buffer.from('name\nJos\xe9\x00\n', 'latin1'), 'binary_file'],
    ['header splits on two delimiters equally', Buffer.from('name;notes, more\nDoe;ok, fine\n'), 'ambiguous_delimiter'],
    ['header splits on two delimiters, rows fit neither', Buffer.from('a,b;c\n1,2\n3;4\n'), 'ambiguous_delimiter'],
    ['unterminated quote, semicolons', Buffer.from('email;name\n"a@b.c;x\nd@e.f;y\n'), 'malformed_csv'],
    ['stray quote, tabs', Buffer.from('name\temail\n"John" Smith\ta@b.c\n"x"\ty\n'), 'malformed_csv'],
    ['stray quote, pipes', Buffer.from('name|email\n"John" Smith|a@b.c\n"x"|y\n'), 'malformed_csv'],
    ['truncated multi-byte char at EOF', Buffer.concat([Buffer.from('name\nJos'), Buffer.from([0xc3])]), 'invalid_utf8'],
    ['truncated 4-byte char at EOF', Buffer.concat([Buffer.from('a\n'), Buffer.from([0xf0, 0x9f, 0x98])]), 'invalid_utf8'],
    ['unterminated quote at EOF', Buffer.from('email\n"a@b.c,x\nd@e.f\n'), 'malformed_csv'],
    ['stray quote inside a quoted field', Buffer.from('name,email\n"John" Smith,a@b.c\n"x",y\n'), 'malformed_csv'],
  ];
  it.each(cases)('%s', async (_name, input, code) => {
    expect((await failure(read(input))).code).toBe(code);
    expect((await failure(read(input, 1, { maxLineBytes: 1024, batchChars: 1 }))).code).toBe(code);
  });

  it('a truncated multi-byte char in mid-file is invalid across a chunk boundary, in a file declared UTF-8', async () => {
    const source = (async function* () {
      yield Buffer.from([0x61, 0x0a, 0xc3]);
      yield Buffer.from('b\n');
    })();
    expect((await failure(readAll(source, { ...LIMITS, encoding: 'utf-8' }))).code).toBe('invalid_utf8');
  });

  const declaredUtf8: [name: string, input: Buffer][] = [
    ['Latin-1 byte', Buffer.from('name\nJos\xe9\n', 'latin1')],
    ['overlong encoding', Buffer.from([0x61, 0x0a, 0xc0, 0xaf, 0x0a])],
    ['UTF-16 surrogate encoded in UTF-8', Buffer.from([0x61, 0x0a, 0xed, 0xa0, 0x80, 0x0a])],
  ];
  it.each(declaredUtf8)('a file declared UTF-8 with invalid bytes is refused: %s', async (_name, input) => {
    for (const chunkSize of [undefined, 1]) {
      expect((await failure(read(input, chunkSize, { ...LIMITS, encoding: 'utf-8' }))).code).toBe('invalid_utf8');
    }
  });

  it('a file detected as UTF-8 from its first 64 KiB is refused for an invalid byte after them', async () => {
    const input = Buffer.concat([Buffer.from('name\n' + 'Jose\n'.repeat(20_000)), Buffer.from('Jos\xe9\n', 'latin1')]);
    const error = await failure(read(input, 4096));
    expect(error.code).toBe('invalid_utf8');
    expect(error.details).toMatchObject({ nearByteOffset: expect.any(Number) });
    const rows = await read(input, 4096, { ...LIMITS, encoding: 'windows-1252' });
    expect(rows.at(-1)).toEqual(['José']);
  });

  it('names the candidates of an ambiguous delimiter and how to give it', async () => {
    const error = await failure(read('name;notes, more\nDoe;ok, fine\n'));
    expect(error.details).toEqual({ candidates: ['comma', 'semicolon'] });
    expect(error.message).toContain('--delimiter');
    expect(error.message).toContain('delimiter');
    expect(await read('name;notes, more\nDoe;ok, fine\n', undefined, { ...LIMITS, delimiter: ';' })).toEqual([
      ['name', 'notes, more'],
      ['Doe', 'ok, fine'],
    ]);
  });

  it('says which byte order a UTF-16 file without a BOM seems to have, and reads it when declared', async () => {
    const le = Buffer.from('name,city\nJosé,Köln\n', 'utf16le');
    expect((await failure(read(le))).details).toEqual({ likely: 'utf-16le' });
    expect((await failure(read(Buffer.from(le).swap16()))).details).toEqual({ likely: 'utf-16be' });
    const rows = [['name', 'city'], ['José', 'Köln']];
    expect(await read(le, 3, { ...LIMITS, encoding: 'utf-16le' })).toEqual(rows);
    expect(await read(Buffer.from(le).swap16(), 3, { ...LIMITS, encoding: 'utf-16be' })).toEqual(rows);
  });

  it('the line limit holds for every delimiter', async () => {
    const limits = { maxLineBytes: 100 };
    for (const d of [',', ';', '\t', '|']) {
      const line = `"${`x${d}`.repeat(60)}"${d}y`;
      const error = await failure(read(`a${d}b\n${line}\nc${d}d\n`, 7, limits));
      expect(error.code, JSON.stringify(d)).toBe('line_too_long');
      expect(error.details).toMatchObject({ record: 2 });
    }
  });

  it('says which record an unterminated quote opens', async () => {
    const error = await failure(read('a\nb\n"c\nd\n'));
    expect(error.details).toMatchObject({ reason: 'unterminated_quote', record: 3 });
  });

  it('a line over the limit is line_too_long, with or without quotes', async () => {
    const limits = { maxLineBytes: 100 };
    expect(await read(`a\n${'x'.repeat(99)}\n`, 7, limits)).toEqual([['a'], ['x'.repeat(99)]]);
    for (const line of ['x'.repeat(101), `"${'x,'.repeat(60)}"`, `a,"${'y\n'.repeat(60)}"`]) {
      const error = await failure(read(`a\n${line}\nb\n`, 7, limits));
      expect(error.code).toBe('line_too_long');
      expect(error.details).toMatchObject({ reason: 'too_long', record: 2 });
    }
  });

  it('the limit counts UTF-8 bytes, not characters', async () => {
    const limits = { maxLineBytes: 100 };
    expect(await read(`${'é'.repeat(49)}\n`, undefined, limits)).toEqual([['é'.repeat(49)]]);
    expect((await failure(read(`${'é'.repeat(51)}\n`, undefined, limits))).code).toBe('line_too_long');
    expect((await failure(read(`${'é'.repeat(51)}`, 3, { maxLineBytes: 100, batchChars: 1 }))).code).toBe('line_too_long');
  });

  it('whether a record passes does not depend on chunk boundaries', async () => {
    const limits = { maxLineBytes: 40 };
    const ok = '"a,""b""",ccccccccccccccccccccccccc\n';
    const tooLong = '"a,""b""",cccccccccccccccccccccccccccccc\n';
    for (const batchChars of [1, 3, 1000]) {
      expect(await read(ok, 5, { ...limits, batchChars })).toEqual([['a,"b"', 'c'.repeat(25)]]);
      expect((await failure(read(tooLong, 5, { ...limits, batchChars }))).code).toBe('line_too_long');
    }
  });

  it('an unbalanced quote in a huge file trips the guard after about maxLineBytes, keeping memory bounded', async () => {
    const maxLineBytes = 1024 * 1024;
    const line = Buffer.from('someone@example.com,Some Name,Some Company\n'.repeat(1500));
    let pulled = 0;
    const source = (async function* () {
      yield Buffer.from('email,name,company\n"unclosed@example.com,x\n');
      // 1 GiB if nothing stopped it.
      for (let i = 0; i < (1 << 30) / line.length; i++) {
        pulled += line.length;
        yield line;
      }
    })();
    const error = await failure(readAll(source, { maxLineBytes }));
    expect(error.code).toBe('line_too_long');
    expect(error.details).toMatchObject({ reason: 'too_long', record: 2 });
    expect(pulled).toBeLessThan(2 * maxLineBytes);
  });

  it('a huge line without any line break trips the guard early', async () => {
    const maxLineBytes = 256 * 1024;
    const piece = Buffer.alloc(64 * 1024, 'x');
    let pulled = 0;
    const source = (async function* () {
      for (let i = 0; i < 16 * 1024; i++) {
        pulled += piece.length;
        yield piece;
      }
    })();
    expect((await failure(readAll(source, { maxLineBytes }))).code).toBe('line_too_long');
    expect(pulled).toBeLessThan(2 * maxLineBytes);
  });

  it('rejects a bad limit', async () => {
    expect((await failure(read('a\n', undefined, { maxLineBytes: 0 }))).code).toBe('bad_argument');
  });

  it('stops when the signal aborts', async () => {
    const controller = new AbortController();
    const source = (async function* () {
      yield Buffer.from('a\nb\n');
      controller.abort(new Error('stop'));
      yield Buffer.from('c\n');
    })();
    const reading = (async () => {
      for await (const _batch of readCsvRows(source, { maxLineBytes: 100, batchChars: 1 }, controller.signal)) void _batch;
    })();
    await expect(reading).rejects.toThrow('stop');
  });
});

describe('readCsvRows: delimiters', () => {
  const rows = [['email', 'name'], ['a@b.c', 'Jane, Doe'], ['d@e.f', '']];
  const detected: [name: string, input: string, rows: string[][]][] = [
    ['comma', 'email,name\na@b.c,"Jane, Doe"\nd@e.f,\n', rows],
    ['semicolon', 'email;name\na@b.c;Jane, Doe\nd@e.f;\n', rows],
    ['tab', 'email\tname\na@b.c\tJane, Doe\nd@e.f\t\n', rows],
    ['pipe', 'email|name\na@b.c|Jane, Doe\nd@e.f|\n', rows],
    ['semicolon with quoted cells and CRLF', '"email";"name"\r\n"a@b.c";"Jane, Doe"\r\n"d@e.f";""\r\n', rows],
    ['the only candidate that splits the header wins, even with commas in the rows', 'name;amount\nSmith;1,5\nDoe;2,25\n', [
      ['name', 'amount'], ['Smith', '1,5'], ['Doe', '2,25'],
    ]],
    ['of two that fit every row, the one giving more cells wins', 'a,b;c,d\n1,2;3,4\n', [['a', 'b;c', 'd'], ['1', '2;3', '4']]],
    ['a header with no candidate is one column, read with commas', 'email\na@b.c\nd@e.f;x\n', [['email'], ['a@b.c'], ['d@e.f;x']]],
    ['a delimiter inside quotes does not count', '"a;b",c\n"d;e",f\n', [['a;b', 'c'], ['d;e', 'f']]],
    ['a comma inside quotes does not count', '"a,b";c\n"d,e";f\n', [['a,b', 'c'], ['d,e', 'f']]],
    ['blank lines before the header are skipped', '\n\nemail|name\n\nx|y\n', [['email', 'name'], ['x', 'y']]],
    ['a quoted CR line break after a semicolon is data', 'a;"b\r\nc"\r\nd;e\r\n', [['a', 'b\r\nc'], ['d', 'e']]],
    ['a quoted lone CR after a tab is data', 'a\t"b\rc"\rd\te\r', [['a', 'b\rc'], ['d', 'e']]],
    ['ragged rows do not stop the only candidate', 'a;b;c\n1\n1;2;3;4\n', [['a', 'b', 'c'], ['1'], ['1', '2', '3', '4']]],
  ];
  it.each(detected)('detects %s', async (_name, input, expected) => {
    expect(await read(input)).toEqual(expected);
    for (const chunkSize of [1, 2, 5]) {
      expect(await read(input, chunkSize, { maxLineBytes: 1024, batchChars: 1 }), `chunk ${chunkSize}`).toEqual(expected);
    }
  });

  const given: [delimiter: ',' | ';' | '\t' | '|', input: string, rows: string[][]][] = [
    [',', 'a;b\n1;2\n', [['a;b'], ['1;2']]],
    [';', 'a,b;c\n1,2;3\n', [['a,b', 'c'], ['1,2', '3']]],
    ['\t', 'a|b\tc\n', [['a|b', 'c']]],
    ['|', 'a\tb|c\n', [['a\tb', 'c']]],
  ];
  it.each(given)('a given delimiter %j is used as it is', async (delimiter, input, expected) => {
    expect(await read(input, undefined, { ...LIMITS, delimiter })).toEqual(expected);
  });

  it('detects from the first 64 Ki characters a file far longer, whatever the chunks', async () => {
    const input = 'email;name\n' + Array.from({ length: 10_000 }, (_, i) => `u${i}@example.com;"Name; ${i}"\n`).join('');
    for (const chunkSize of [1000, 65_536, 1 << 20]) {
      const got = await read(input, chunkSize);
      expect(got).toHaveLength(10_001);
      expect(got[9_999]).toEqual(['u9998@example.com', 'Name; 9998']);
    }
  });
});

describe('readCsvRows: encodings', () => {
  const rows = [['name', 'city'], ['José Müller', 'Köln'], ['Zoë “Z” Ørsted', 'Århus €']];
  const text = 'name;city\r\nJosé Müller;Köln\r\nZoë “Z” Ørsted;Århus €\r\n';
  const utf16le = (s: string) => Buffer.from(s, 'utf16le');
  const cp1252 = (s: string) => Buffer.from(s.replace('“', '\x93').replace('”', '\x94').replace('€', '\x80'), 'latin1');
  const detected: [name: string, input: Buffer][] = [
    ['UTF-8', Buffer.from(text)],
    ['UTF-8 with a BOM', Buffer.from('\uFEFF' + text)],
    ['UTF-16 LE with a BOM', utf16le('\uFEFF' + text)],
    ['UTF-16 BE with a BOM', utf16le('\uFEFF' + text).swap16()],
    ['Windows-1252 (bytes invalid in UTF-8)', cp1252(text)],
  ];
  it.each(detected)('detects %s and gives the same rows at every chunk size', async (_name, input) => {
    expect(await read(input)).toEqual(rows);
    for (const chunkSize of [1, 2, 3, 7]) {
      expect(await read(input, chunkSize, { maxLineBytes: 1024, batchChars: 1 }), `chunk ${chunkSize}`).toEqual(rows);
    }
  });

  it('é as the single byte 0xE9 is Windows-1252', async () => {
    expect(await read(Buffer.from('name\nJos\xe9\n', 'latin1'))).toEqual([['name'], ['José']]);
  });

  const declared: [encoding: 'utf-8' | 'utf-16le' | 'utf-16be' | 'windows-1252' | 'iso-8859-1', input: Buffer][] = [
    ['utf-8', Buffer.from(text)],
    ['utf-8', Buffer.from('\uFEFF' + text)],
    ['utf-16le', utf16le(text)],
    ['utf-16le', utf16le('\uFEFF' + text)],
    ['utf-16be', utf16le(text).swap16()],
    ['utf-16be', utf16le('\uFEFF' + text).swap16()],
    ['windows-1252', cp1252(text)],
    // ISO-8859-1 is read as Windows-1252: its 0x80-0x9F controls never occur in real text.
    ['iso-8859-1', cp1252(text)],
  ];
  it.each(declared)('reads a file declared %s', async (encoding, input) => {
    expect(await read(input, 5, { ...LIMITS, encoding })).toEqual(rows);
  });

  it('a BOM decides over a declared encoding', async () => {
    expect(await read(Buffer.from('\uFEFF' + text), undefined, { ...LIMITS, encoding: 'windows-1252' })).toEqual(rows);
    expect(await read(utf16le('\uFEFF' + text), undefined, { ...LIMITS, encoding: 'utf-8' })).toEqual(rows);
  });

  it('a Windows-1252 file declared as such keeps bytes that are valid UTF-8 as Windows-1252', async () => {
    expect(await read(Buffer.from('a\n\xc3\xa9\n', 'latin1'), undefined, { ...LIMITS, encoding: 'windows-1252' })).toEqual([['a'], ['Ã©']]);
  });
});
