import Papa from 'papaparse';
import { AppError, ERROR_CODES } from '../shared/errors.js';
import { INPUT_DELIMITERS, type InputDelimiter } from '../storage/job-records.js';
import { DELIMITER_NAMES } from './input-options.js';

/** Characters of text the delimiter is chosen from. */
export const DELIMITER_SAMPLE_CHARS = 64 * 1024;
/** Records compared, the header included. */
const SAMPLE_RECORDS = 50;

interface Fit {
  delimiter: InputDelimiter;
  /** Cells in the header (the first record). */
  cells: number;
  /** Every sampled record has the header's cell count, and no quote is broken. */
  consistent: boolean;
}

/**
 * The rule of docs/reference/file-formats.md: each candidate (comma, semicolon, tab, pipe) splits the first records
 * (complete ones within the first 64 Ki characters, at most 50, blank lines skipped, quotes
 * honoured). A candidate that does not split the header is out. None left: one column, comma.
 * One left: it. Several: those that give every sampled record the header's cell count without a
 * broken quote; one of them alone, or the one with more cells than any other, wins; else the file
 * is refused with `ambiguous_delimiter`, naming the candidates.
 *
 * `complete` says the text is the whole file, so its last record is not cut.
 */
export function detectDelimiter(text: string, complete: boolean): InputDelimiter {
  // Line ends only matter inside quoted cells here, where they never change a cell count.
  const sample = text.slice(0, DELIMITER_SAMPLE_CHARS).replace(/\r\n?/g, '\n');
  const whole = complete && text.length <= DELIMITER_SAMPLE_CHARS;
  const splitting = INPUT_DELIMITERS.map((d) => fit(sample, d, whole)).filter((f) => f.cells > 1);
  if (splitting.length === 0) return ',';
  if (splitting.length === 1) return splitting[0]!.delimiter;
  const consistent = splitting.filter((f) => f.consistent).sort((a, b) => b.cells - a.cells);
  if (consistent.length === 1 || (consistent.length > 1 && consistent[0]!.cells > consistent[1]!.cells)) return consistent[0]!.delimiter;
  const names = splitting.map((f) => DELIMITER_NAMES[f.delimiter]);
  throw new AppError(
    ERROR_CODES.ambiguousDelimiter,
    `cannot tell the delimiter: the header splits on ${names.join(' and on ')} and the first rows fit ${consistent.length === 0 ? 'none' : 'more than one'} of them; give it with --delimiter or the API field delimiter (${names.join(', ')})`,
    { details: { candidates: names } },
  );
}

function fit(sample: string, delimiter: InputDelimiter, whole: boolean): Fit {
  const { data, errors, meta } = Papa.parse<string[]>(sample, {
    delimiter,
    newline: '\n',
    quoteChar: '"',
    skipEmptyLines: 'greedy',
    preview: SAMPLE_RECORDS,
  });
  // The last record may be cut by the sample's end, unless the sample is the whole file or
  // preview stopped before the end.
  const kept = whole || meta.truncated || data.length === 1 ? data.length : data.length - 1;
  const cells = data[0]?.length ?? 0;
  const records = data.slice(0, kept);
  const consistent =
    records.every((r) => r.length === cells) && !errors.some((e) => e.row === undefined || e.row < kept);
  return { delimiter, cells, consistent };
}
