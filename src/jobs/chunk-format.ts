/**
 * A chunk object holds one JSON line per input row: [kind, key or error code, original cells], and
 * for a job with several lookups one more [kind, key or error code] pair per further lookup after
 * the cells. Split decides the kinds once, in input order, so every later step (and every resume)
 * sees the same duplicates and the same invalid rows.
 */
export const ROW_KINDS = { lookup: 0, duplicate: 1, invalid: 2 } as const;
export type RowKind = (typeof ROW_KINDS)[keyof typeof ROW_KINDS];

/** What one lookup makes of one row. */
export interface RowKey {
  kind: RowKind;
  /** The normalised key, or for an invalid row its error code. */
  value: string;
}

/** A row as its first lookup sees it, with the further lookups' keys in `more`. */
export interface ChunkRow extends RowKey {
  cells: string[];
  more: RowKey[] | undefined;
}

export function encodeChunkRow(keys: readonly RowKey[], cells: readonly string[]): string {
  const line: unknown[] = [keys[0]!.kind, keys[0]!.value, cells];
  for (let l = 1; l < keys.length; l++) line.push(keys[l]!.kind, keys[l]!.value);
  return JSON.stringify(line);
}

export function decodeChunkRow(line: string): ChunkRow {
  const parsed = JSON.parse(line) as unknown[];
  const row: ChunkRow = { kind: parsed[0] as RowKind, value: parsed[1] as string, cells: parsed[2] as string[], more: undefined };
  if (parsed.length > 3) {
    row.more = [];
    for (let i = 3; i < parsed.length; i += 2) row.more.push({ kind: parsed[i] as RowKind, value: parsed[i + 1] as string });
  }
  return row;
}

/** Lookup `l`'s key of the row. */
export function rowKey(row: ChunkRow, l: number): RowKey {
  return l === 0 ? row : row.more![l - 1]!;
}

export function chunkObjectKey(jobId: string, chunkIndex: number): string {
  return `jobs/${jobId}/chunks/${String(chunkIndex).padStart(5, '0')}.jsonl`;
}

export function partObjectKey(jobId: string, chunkIndex: number, filter: string): string {
  return `jobs/${jobId}/parts/${String(chunkIndex).padStart(5, '0')}.${filter}.csv`;
}

export function resultObjectKey(jobId: string, filter: string): string {
  return `results/${jobId}/${filter}.csv`;
}
