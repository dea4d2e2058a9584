/**
 * Blanks a cell may carry around its value without anyone seeing them: every Unicode space (NBSP
 * from Excel and web pages included), zero-width characters, word joiners, BOMs and soft hyphens,
 * all of which copy-and-paste leaves behind. `trim()` alone keeps the zero-width ones.
 */
const EDGE_BLANKS = /^[\s\u00ad\u180e\u200b-\u200d\u2060\ufeff]+|[\s\u00ad\u180e\u200b-\u200d\u2060\ufeff]+$/gu;

/** Straight and typographic quote marks, as spreadsheets and word processors write them. */
const QUOTES = new Set(['"', "'", '“', '”', '„', '‟', '‘', '’', '‚', '‛', '«', '»', '‹', '›']);

/**
 * A cell's value without invisible blanks and without quote marks wrapped around the whole of it
 * (`"jane@example.com"`, `“Acme”`, `' Acme '`), which exports and hand-typed lists add. Only a
 * pair at both ends is taken off: `"Jane" <jane@example.com>` and `Toys "R" Us` keep theirs.
 */
export function unwrapCell(raw: string): string {
  let text = raw.replace(EDGE_BLANKS, '');
  while (text.length >= 2 && QUOTES.has(text[0]!) && QUOTES.has(text[text.length - 1]!)) {
    text = text.slice(1, -1).replace(EDGE_BLANKS, '');
  }
  return text;
}
