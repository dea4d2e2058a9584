import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './test-engine.js';

/**
 * The table of accepted and refused input files (docs/reference/file-formats.md), read as test data: the table readers
 * see is the table the suite runs, so neither can drift from the other.
 */
export const FORMS_HEADING = '### Accepted and refused files';

export interface FormRow {
  /** The row's first cell, as written. */
  name: string;
  type: string;
  /** API field name to value, as written in the row (`delimiter=;` gives `{ delimiter: ';' }`). */
  options: Record<string, string>;
  input: Buffer;
  expected: { refused: string } | { rows: ExpectedRow[] };
  /** Cells of the output's data rows: row number from 1, output column name, exact text. */
  cells: { row: number; column: string; value: string }[];
  /** The result files must start with a UTF-8 byte order mark (and must not otherwise). */
  bom: boolean;
}

export interface ExpectedRow {
  status: string;
  /** `phone_e164`, for phone jobs; '' for a row without one. */
  e164?: string;
  gender?: string;
  /** The row's `error` cell; '' when the table names no code. */
  error: string;
}

const COLUMNS = ['form', 'type', 'options', 'input', 'result', 'output'];
const GENDERS = new Set(['male', 'female', 'unknown']);

export function readFormsTable(file = path.join(REPO_ROOT, 'docs/reference/file-formats.md')): FormRow[] {
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  const start = lines.indexOf(FORMS_HEADING);
  if (start === -1) throw new Error(`${file} has no "${FORMS_HEADING}" section`);
  const first = lines.findIndex((line, i) => i > start && line.startsWith('|'));
  const table: string[] = [];
  for (let i = first; i < lines.length && lines[i]!.startsWith('|'); i++) table.push(lines[i]!);
  const header = cellsOf(table[0]!).map((c) => c.toLowerCase());
  if (header.join() !== COLUMNS.join()) throw new Error(`the forms table's columns are ${header.join(', ')}, expected ${COLUMNS.join(', ')}`);
  return table.slice(2).map((line) => {
    const [name, type, options, input, result, output] = cellsOf(line);
    try {
      return parseRow(name!, type!, options!, input!, result!, output!);
    } catch (e) {
      throw new Error(`forms table, row "${name}": ${(e as Error).message}`);
    }
  });
}

/** GFM splits a row on every unescaped `|`, code spans included; `\|` is a literal pipe. */
function cellsOf(line: string): string[] {
  const inner = line.trim().replace(/^\|/, '').replace(/(?<!\\)\|$/, '');
  return inner.split(/(?<!\\)\|/).map((cell) => cell.trim().replaceAll('\\|', '|'));
}

function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]*)`/g)].map((m) => m[1]!);
}

function parseRow(name: string, typeCell: string, optionsCell: string, inputCell: string, resultCell: string, outputCell: string): FormRow {
  const [type] = codeSpans(typeCell);
  if (!type) throw new Error('no job type');
  const options: Record<string, string> = {};
  for (const span of codeSpans(optionsCell)) {
    const eq = span.indexOf('=');
    if (eq < 1) throw new Error(`option "${span}" is not NAME=VALUE`);
    options[span.slice(0, eq)] = span.slice(eq + 1);
  }
  let input: Buffer;
  if (inputCell === '0 bytes') input = Buffer.alloc(0);
  else {
    const spans = codeSpans(inputCell);
    if (spans.length !== 1) throw new Error('the input is not one code span');
    input = decodeInput(spans[0]!);
  }
  const cells: FormRow['cells'] = [];
  let bom = false;
  for (const span of codeSpans(outputCell)) {
    if (span === 'BOM') {
      bom = true;
      continue;
    }
    const m = /^(?:(\d+):)?([^=]+)=(.*)$/s.exec(span);
    if (!m) throw new Error(`output check "${span}" is not [ROW:]COLUMN=VALUE`);
    cells.push({ row: Number(m[1] ?? 1), column: m[2]!, value: decodeText(m[3]!) });
  }
  return { name, type, options, input, expected: parseResult(resultCell), cells, bom };
}

/**
 * `refused CODE`, or each data row's outcome in order, comma-separated: `STATUS [+E164] [GENDER]
 * [ERROR]`, or `N×` before one for N rows alike.
 */
function parseResult(cell: string): FormRow['expected'] {
  const text = cell.replaceAll('`', '').trim();
  const refused = /^refused (\w+)$/.exec(text);
  if (refused) return { refused: refused[1]! };
  return {
    rows: text.split(/,\s*/).flatMap((written) => {
      const repeat = /^(\d+)×(.*)$/s.exec(written.trim());
      return Array.from({ length: repeat ? Number(repeat[1]) : 1 }, () => repeat?.[2] ?? written);
    }).map((outcome) => {
      const [status, ...rest] = outcome.trim().split(/\s+/);
      const row: ExpectedRow = { status: status!, error: '' };
      for (const token of rest) {
        if (token.startsWith('+')) row.e164 = token;
        else if (GENDERS.has(token)) row.gender = token;
        else row.error = token;
      }
      return row;
    }),
  };
}

const ENCODERS: Record<string, (text: string) => Buffer> = {
  'utf-8': (text) => Buffer.from(text, 'utf8'),
  'utf-16le': (text) => Buffer.from(text, 'utf16le'),
  'utf-16be': (text) => Buffer.from(text, 'utf16le').swap16(),
  'windows-1252': windows1252,
};

/**
 * The table's notation for the bytes of a file. The text is UTF-8 unless it starts with
 * `[utf-16le]`, `[utf-16be]` or `[windows-1252]`, which encodes every character after it that
 * way. `\n`, `\r`, `\t`, `\\` as usual; `\u{HEX}` one character by code point (`\u{FEFF}` is the
 * BOM of whatever encoding is in force); `\xHH` one raw byte, whatever the encoding;
 * `[N×TEXT]` TEXT repeated N times.
 */
export function decodeInput(notation: string): Buffer {
  const prefix = /^\[(utf-16le|utf-16be|windows-1252)\]/.exec(notation);
  const encode = ENCODERS[prefix?.[1] ?? 'utf-8']!;
  const parts: Buffer[] = [];
  let text = '';
  const flush = () => {
    if (text) parts.push(encode(text));
    text = '';
  };
  const body = expandRepeats(notation.slice(prefix?.[0].length ?? 0));
  for (let i = 0; i < body.length; i++) {
    const ch = body[i]!;
    if (ch !== '\\') {
      text += ch;
      continue;
    }
    const next = body[i + 1];
    if (next === 'x') {
      const hex = body.slice(i + 2, i + 4);
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) throw new Error(`bad \\x escape at ${i}`);
      flush();
      parts.push(Buffer.from([parseInt(hex, 16)]));
      i += 3;
    } else {
      const [char, length] = escapedChar(body, i);
      text += char;
      i += length - 1;
    }
  }
  flush();
  return Buffer.concat(parts);
}

/** The notation without raw bytes, for the text of an output cell. */
export function decodeText(notation: string): string {
  let out = '';
  const body = expandRepeats(notation);
  for (let i = 0; i < body.length; i++) {
    if (body[i] !== '\\') {
      out += body[i];
      continue;
    }
    const [char, length] = escapedChar(body, i);
    out += char;
    i += length - 1;
  }
  return out;
}

function expandRepeats(text: string): string {
  return text.replace(/\[(\d+)×([^\]]*)\]/g, (_, n: string, unit: string) => unit.repeat(Number(n)));
}

function escapedChar(body: string, i: number): [string, number] {
  const next = body[i + 1];
  const simple: Record<string, string> = { n: '\n', r: '\r', t: '\t', '\\': '\\' };
  if (next !== undefined && next in simple) return [simple[next]!, 2];
  const u = /^\\u\{([0-9a-fA-F]{1,6})\}/.exec(body.slice(i));
  if (u) return [String.fromCodePoint(parseInt(u[1]!, 16)), u[0].length];
  throw new Error(`unknown escape "\\${next ?? ''}" at ${i}`);
}

/**
 * Windows-1252 bytes, the 0x80-0x9F block taken from the decoder itself rather than a hand table.
 * Streaming: Node 20's one-shot decode of windows-1252 reads that block as Latin-1 control codes.
 */
function windows1252(text: string): Buffer {
  const decoder = new TextDecoder('windows-1252');
  const high = new Map<string, number>();
  for (let b = 0x80; b <= 0x9f; b++) high.set(decoder.decode(Uint8Array.of(b), { stream: true }), b);
  return Buffer.from(
    [...text].map((ch) => {
      const code = ch.codePointAt(0)!;
      if (high.has(ch)) return high.get(ch)!;
      if (code < 0x80 || (code >= 0xa0 && code <= 0xff)) return code;
      throw new Error(`"${ch}" has no Windows-1252 byte`);
    }),
  );
}
