/**
 * A chunk object holds one JSON line per input row: [kind, key or error code, original cells].
 * Split decides the kind once, in input order, so every later step (and every resume) sees the
 * same duplicates and the same invalid rows.
 */
export const ROW_KINDS = { lookup: 0, duplicate: 1, invalid: 2 } as const;
export type RowKind = (typeof ROW_KINDS)[keyof typeof ROW_KINDS];

export interface ChunkRow {
  kind: RowKind;
  /** The normalised key, or for an invalid row its error code. */
  value: string;
  cells: string[];
}

export function encodeChunkRow(kind: RowKind, value: string, cells: readonly string[]): string {
  return JSON.stringify([kind, value, cells]);
}

export function decodeChunkRow(line: string): ChunkRow {
  const [kind, value, cells] = JSON.parse(line) as [RowKind, string, string[]];
  return { kind, value, cells };
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
