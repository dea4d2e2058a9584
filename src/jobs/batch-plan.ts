/**
 * Where the checkpoint batch that starts at `cursor` ends (exclusive): after `maxRows` rows, or
 * before the row that would take the batch past `maxBytes` bytes of chunk data, whichever comes
 * first; one row is always taken, so a batch always moves the cursor. Counting rows alone let a
 * batch of 1,000 rows of 21,800 cells each decode into gigabytes of cell strings. `lineBytes`
 * gives the size of the row at a pass position without decoding it.
 *
 * The end is a pure function of the chunk's bytes and the cursor, and a resume starts at the
 * committed cursor, so a batch redone after a crash covers exactly the rows it covered before.
 */
export function batchEnd(lineBytes: (position: number) => number, cursor: number, passRows: number, maxRows: number, maxBytes: number): number {
  const last = Math.min(cursor + maxRows, passRows);
  let end = cursor;
  for (let bytes = 0; end < last; end++) {
    bytes += lineBytes(end);
    if (bytes > maxBytes && end > cursor) break;
  }
  return end;
}
