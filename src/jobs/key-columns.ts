import type { JobLookup } from '../../pipelines/index.js';
import type { NormaliseOptions, Pipeline } from '../../pipelines/pipeline.js';
import { AppError, ERROR_CODES } from '../shared/errors.js';

/** Each lookup's key column in the first row of a file. */
export interface KeyColumn {
  header: string[];
  /** Column of each lookup's key, in lookup order. */
  indexes: number[];
  /** A file with no header row: its first row is data. */
  firstRowIsData: boolean;
}

/** How much of the header an error repeats: enough to spot a typo, never a whole wide row. */
const SHOWN_CELLS = 20;
const SHOWN_CHARS = 40;

/**
 * A header name as it is compared: without case, accents, blanks (NBSP and zero-width ones too),
 * dashes, underscores and dots, so that `E-mail Address`, `email_address`, `EmailAddress` and
 * `Téléphone` meet `email address` and `telephone`. Exports differ in exactly these.
 */
export function normaliseHeader(name: string): string {
  return name
    .normalize('NFKD')
    .replace(/\p{M}/gu, '')
    .toLowerCase()
    .replace(/[\s\p{Pd}_.\u200b-\u200d\u2060\ufeff]/gu, '');
}

/**
 * Each lookup's key column, by `findKeyColumn`. A file without a header row can serve one lookup
 * only: with several, every key column must be found by its header.
 */
export function findKeyColumns(firstRow: string[], lookups: readonly JobLookup[], options: NormaliseOptions): KeyColumn {
  if (lookups.length === 1) {
    const found = findKeyColumn(firstRow, lookups[0]!.pipeline, lookups[0]!.column, options);
    return { header: found.header, indexes: [found.index], firstRowIsData: found.firstRowIsData };
  }
  const indexes = lookups.map(({ pipeline, column }) => {
    const choose = { pipeline, several: true };
    const index = column === undefined ? byKeyNames(firstRow, pipeline, choose) : byName(firstRow, column, choose);
    if (index !== undefined) return index;
    if (column !== undefined) throw notFound(firstRow, column, `write lookup=${pipeline.type}:NAME with one of these names`);
    throw new AppError(
      ERROR_CODES.noKeyColumn,
      `found no ${pipeline.keyHeader} column for the ${pipeline.type} lookup in the header row ${shownHeader(firstRow)}; ${lookedFor(pipeline)}. ` +
        `Name the column with lookup=${pipeline.type}:COLUMN.`,
      { details: { type: pipeline.type, header: shownCells(firstRow) } },
    );
  });
  return { header: firstRow, indexes, firstRowIsData: false };
}

/**
 * The key column is the header the caller named; else a header cell named like the type's key
 * (`email`); else, when the first row's first cell is itself a valid key, column 1 of a file with
 * no header row (no header name is a valid key, and a data row such as `+4930123456,Mobile` must
 * not pass as a header because one of its cells reads like an alias); else the aliases, rank by rank.
 */
export function findKeyColumn(
  firstRow: string[],
  pipeline: Pipeline,
  column: string | undefined,
  options: NormaliseOptions = {},
): { header: string[]; index: number; firstRowIsData: boolean } {
  const choose = { pipeline, several: false };
  if (column !== undefined) {
    const index = byName(firstRow, column, choose);
    if (index === undefined) throw notFound(firstRow, column, `give one of these names with --column NAME (API field column, or lookup=${pipeline.type}:NAME)`);
    return { header: firstRow, index, firstRowIsData: false };
  }
  const own = byRank(firstRow, [pipeline.keyHeader], choose);
  if (own !== undefined) return { header: firstRow, index: own, firstRowIsData: false };
  if (pipeline.headerless && pipeline.normalise(firstRow[0] ?? '', options).ok) {
    const header = firstRow.map((_, i) => (i === 0 ? pipeline.keyHeader : `column_${i + 1}`));
    return { header, index: 0, firstRowIsData: true };
  }
  const index = byKeyNames(firstRow, pipeline, choose);
  if (index !== undefined) return { header: firstRow, index, firstRowIsData: false };
  throw new AppError(
    ERROR_CODES.noKeyColumn,
    `found no ${pipeline.keyHeader} column in the header row ${shownHeader(firstRow)}; ${lookedFor(pipeline)}` +
      (pipeline.headerless ? `, and the first cell is not a valid ${pipeline.keyHeader} either` : '') +
      `. Name the key column with --column NAME (API field column, or lookup=${pipeline.type}:NAME).`,
    { details: { type: pipeline.type, header: shownCells(firstRow) } },
  );
}

interface Choice {
  readonly pipeline: Pipeline;
  /** Whether the job has several lookups, so that only `lookup=TYPE:COLUMN` can choose. */
  readonly several: boolean;
}

/** The key header, then each alias group in turn; the first rank with a match decides. */
function byKeyNames(cells: readonly string[], pipeline: Pipeline, choose: Choice): number | undefined {
  for (const names of [[pipeline.keyHeader], ...pipeline.keyAliases]) {
    const index = byRank(cells, names, choose);
    if (index !== undefined) return index;
  }
  return undefined;
}

function byRank(cells: readonly string[], names: readonly string[], choose: Choice): number | undefined {
  const wanted = new Set(names.map(normaliseHeader));
  const matches = indexesWhere(cells, (cell) => wanted.has(normaliseHeader(cell)));
  if (matches.length > 1) throw ambiguous(cells, matches, choose);
  return matches[0];
}

/**
 * A column the caller named, compared like the aliases. Where several cells match, the one spelt
 * as given (case and surrounding blanks aside) wins: `--column work_email` picks `work_email` over
 * `Work Email`.
 */
function byName(cells: readonly string[], column: string, choose: Choice): number | undefined {
  const wanted = normaliseHeader(column);
  const matches = indexesWhere(cells, (cell) => normaliseHeader(cell) === wanted);
  if (matches.length <= 1) return matches[0];
  const exact = matches.filter((i) => cells[i]!.trim().toLowerCase() === column.trim().toLowerCase());
  if (exact.length === 1) return exact[0];
  throw ambiguous(cells, exact.length > 1 ? exact : matches, choose);
}

function indexesWhere(cells: readonly string[], test: (cell: string) => boolean): number[] {
  const found: number[] = [];
  cells.forEach((cell, i) => {
    if (test(cell)) found.push(i);
  });
  return found;
}

/**
 * Two candidates are an error, not a pick: taking the first `email` of `Work Email,Personal Email`
 * would charge for the addresses the customer did not mean. The message says how to choose, and
 * when the candidates are spelt alike, choosing by name cannot work, so it says to rename one.
 */
function ambiguous(cells: readonly string[], indexes: readonly number[], { pipeline, several }: Choice): AppError {
  const names = indexes.map((i) => cells[i]!);
  const listed = indexes.map((i) => `"${cut(cells[i]!)}" (column ${i + 1})`).join(' and ');
  const alike = new Set(names.map((n) => n.trim().toLowerCase())).size < names.length;
  const how = alike
    ? 'columns are chosen by name, so rename one of them in the file'
    : several
      ? `choose one with lookup=${pipeline.type}:COLUMN, e.g. lookup=${pipeline.type}:${cut(names[0]!)}`
      : `choose one with --column "${cut(names[0]!)}" (API field column, or lookup=${pipeline.type}:COLUMN)`;
  return new AppError(ERROR_CODES.ambiguousColumn, `${indexes.length} columns of the header row could be the ${pipeline.keyHeader} column: ${listed}; ${how}`, {
    details: { type: pipeline.type, candidates: names, header: shownCells(cells) },
  });
}

function notFound(cells: readonly string[], column: string, how: string): AppError {
  return new AppError(
    ERROR_CODES.columnNotFound,
    `no column named "${cut(column)}" in the header row ${shownHeader(cells)} (names are compared without case, accents, blanks, dashes, underscores and dots); ${how}`,
    { details: { column, header: shownCells(cells) } },
  );
}

function lookedFor(pipeline: Pipeline): string {
  const examples = [pipeline.keyHeader, ...pipeline.keyAliases.map((group) => group[0]!)];
  return `looked for ${examples.map((n) => `"${n}"`).join(', ')} and the other names the README lists for ${pipeline.type}`;
}

function shownCells(cells: readonly string[]): string[] {
  return cells.slice(0, SHOWN_CELLS).map(cut);
}

function shownHeader(cells: readonly string[]): string {
  const more = cells.length > SHOWN_CELLS ? ` and ${cells.length - SHOWN_CELLS} more` : '';
  return `[${shownCells(cells).map((c) => JSON.stringify(c)).join(', ')}${more}]`;
}

function cut(text: string): string {
  const chars = [...text];
  return chars.length > SHOWN_CHARS ? `${chars.slice(0, SHOWN_CHARS - 1).join('')}…` : text;
}
