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

const FORMULA_START = /^[=+\-@\t\r]/;
const PLAIN_NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;

/**
 * Defuses a cell that a spreadsheet would run as a formula (OWASP CSV injection: a leading `=`,
 * `+`, `-`, `@`, TAB or CR) by putting `'` in front of it. Plain signed numbers such as `-12.5` or
 * `+442079460958` are left alone: a spreadsheet reads them as numbers and runs nothing, and
 * escaping them would spoil negative amounts and E.164 phone numbers. Anything more than digits
 * and one decimal point is escaped, `+44 20 7946 0958` included: spaces or brackets make it an
 * expression to a spreadsheet, and the narrow exception keeps the rule easy to trust.
 */
export function escapeFormula(cell: string): string {
  if (!FORMULA_START.test(cell) || PLAIN_NUMBER.test(cell)) return cell;
  return `'${cell}`;
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
