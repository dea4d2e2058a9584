/**
 * Quoting per RFC 4180, plus leading or trailing blanks: some readers (and papaparse after a
 * closing quote) trim those, which would change a cell on its way back in.
 */
const NEEDS_QUOTES = /[",\r\n]|^[ \t]|[ \t]$/;
const QUOTE = /"/g;

/** One CSV record with its `\n`. Cells that need no quoting are copied as they are. */
export function csvLine(cells: readonly string[]): string {
  let line = '';
  for (let i = 0; i < cells.length; i++) {
    const cell = cells[i]!;
    if (i > 0) line += ',';
    line += NEEDS_QUOTES.test(cell) ? `"${cell.replace(QUOTE, '""')}"` : cell;
  }
  return line + '\n';
}

/**
 * The characters a spreadsheet reads as the start of a formula (OWASP CSV injection and ASVS
 * 1.2.10: `=`, `+`, `-`, `@`, TAB, CR, NUL), and their full-width forms (`＝＋－＠`), which East
 * Asian input methods can turn into the ASCII ones when a cell is edited; no real value starts
 * with them, so escaping them costs nothing.
 */
const FORMULA_START = /^[=+\-@\t\r\0\uFF1D\uFF0B\uFF0D\uFF20]/;
/** Blanks that some readers trim before looking (LibreOffice's "trim spaces"), so ` =1+1` counts too. */
const LEADING_BLANKS = /^[ \u00A0\u3000]+/;
/** `-12`, `+3.5`, `-.5`, `-1,5`, `1e5`, `-2.5E-3`: one number with an optional sign. */
const PLAIN_NUMBER = /^[+-]?(?:\d+(?:[.,]\d*)?|[.,]\d+)(?:[eE][+-]?\d+)?$/;
/**
 * A phone number as people write it: `+`, a digit, then only digits, blanks, dashes, dots and
 * brackets, ending in a digit, with at least 7 digits in all (`+4930123456`, `+49 30 1234567`,
 * `+1 (415) 816-6557`, `+44-20-7946-0958`).
 */
const PHONE_NUMBER = /^\+\d[\d ().-]*\d$/;
const MIN_PHONE_DIGITS = 7;

/**
 * Defuses a cell that a spreadsheet would run as a formula by putting `'` in front of it: a cell
 * whose first character, or first after leading blanks, is in FORMULA_START. Left alone, because
 * spreadsheets read them as values and escaping spoils the customer's data: a cell that is only a
 * number (PLAIN_NUMBER) or a phone number (PHONE_NUMBER). Neither can run anything: a formula
 * needs a letter (a function, a reference, DDE's `cmd|`) or a quote, and both forms hold only
 * digits, signs, blanks, `.`, `,`, `(`, `)` and an exponent `e`. `-2+3`, `+1+cmd|...` and
 * `+ 1)` are still escaped. A cell starting with TAB, CR or NUL is always escaped.
 */
export function escapeFormula(cell: string): string {
  const body = cell.replace(LEADING_BLANKS, '');
  if (!FORMULA_START.test(body) || PLAIN_NUMBER.test(body) || isPhoneNumber(body)) return cell;
  return `'${cell}`;
}

function isPhoneNumber(text: string): boolean {
  if (!PHONE_NUMBER.test(text)) return false;
  let digits = 0;
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) >= 0x30 && text.charCodeAt(i) <= 0x39) digits++;
  return digits >= MIN_PHONE_DIGITS;
}

/**
 * Cuts text written by `csvLine` back into its records, each with its `\n`. Only a `\n` outside
 * quotes ends a record; `""` inside a quoted cell flips the state twice, so it needs no special case.
 */
export function csvRecords(text: string): string[] {
  const records: string[] = [];
  let start = 0;
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) quoted = !quoted;
    else if (c === 0x0a && !quoted) {
      records.push(text.slice(start, i + 1));
      start = i + 1;
    }
  }
  if (start < text.length) records.push(text.slice(start));
  return records;
}

/** The cells of one record written by `csvLine` (with or without its `\n`): `csvLine`'s inverse. */
export function csvCells(record: string): string[] {
  const end = record.endsWith('\n') ? record.length - 1 : record.length;
  const cells: string[] = [];
  let i = 0;
  for (;;) {
    if (record.charCodeAt(i) === 0x22) {
      let cell = '';
      let from = i + 1;
      for (;;) {
        const quote = record.indexOf('"', from);
        if (quote < 0 || quote >= end) throw new Error('unterminated quoted cell');
        cell += record.slice(from, quote);
        if (record.charCodeAt(quote + 1) === 0x22) {
          cell += '"';
          from = quote + 2;
        } else {
          i = quote + 1;
          break;
        }
      }
      cells.push(cell);
    } else {
      const comma = record.indexOf(',', i);
      const stop = comma < 0 || comma >= end ? end : comma;
      cells.push(record.slice(i, stop));
      i = stop;
    }
    if (i >= end) return cells;
    i++; // the comma
  }
}
