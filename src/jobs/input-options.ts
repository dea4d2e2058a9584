import { INPUT_DELIMITERS, INPUT_ENCODINGS, type InputDelimiter, type InputEncoding } from '../storage/job-records.js';

/** The word for each delimiter, as messages and the API name them. */
export const DELIMITER_NAMES: Readonly<Record<InputDelimiter, string>> = { ',': 'comma', ';': 'semicolon', '\t': 'tab', '|': 'pipe' };

/**
 * A delimiter as a caller writes it: the character itself, `\t` written as two characters (a
 * shell or a form field rarely carries a real tab), or its word, any case.
 */
export function parseDelimiter(value: string): InputDelimiter | undefined {
  const written = value === '\\t' ? '\t' : value;
  if ((INPUT_DELIMITERS as readonly string[]).includes(written)) return written as InputDelimiter;
  const word = value.trim().toLowerCase();
  return INPUT_DELIMITERS.find((d) => DELIMITER_NAMES[d] === word);
}

/** Other names the same encodings go by in exports and tools (Python, iconv, MySQL). */
const ENCODING_ALIASES: Readonly<Record<string, InputEncoding>> = {
  utf8: 'utf-8',
  utf16le: 'utf-16le',
  utf16be: 'utf-16be',
  cp1252: 'windows-1252',
  latin1: 'iso-8859-1',
  'latin-1': 'iso-8859-1',
};

/** An encoding name, any case: one of INPUT_ENCODINGS or an alias above. */
export function parseEncoding(value: string): InputEncoding | undefined {
  const name = value.trim().toLowerCase();
  if ((INPUT_ENCODINGS as readonly string[]).includes(name)) return name as InputEncoding;
  return ENCODING_ALIASES[name];
}

export const DELIMITER_HELP = 'comma, semicolon, tab or pipe (or the character itself: , ; \\t |)';
export const ENCODING_HELP = `${INPUT_ENCODINGS.join(', ')}`;
