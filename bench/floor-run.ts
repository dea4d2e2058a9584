/**
 * The floor: the least a job over this file could cost on this machine, with the same CSV parser.
 *
 *   node dist/bench/floor-run.js --input FILE --out FILE
 *
 * Streams FILE through papaparse (`Papa.NODE_STREAM_INPUT`), computes a trivial per-row result
 * (the length of the lower-cased, trimmed email), and writes every original cell plus that result
 * as CSV to local disk. No object store, no SQLite, no billing, no checkpoints. Prints one JSON line.
 */
import fs from 'node:fs';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import Papa from 'papaparse';

export interface FloorResult {
  event: 'result';
  rows: number;
  wallMs: number;
  outBytes: number;
  cpuUserMs: number;
  cpuSystemMs: number;
  maxRssKiB: number;
}

const NEEDS_QUOTES = /[",\r\n]/;
const cell = (value: string): string => (NEEDS_QUOTES.test(value) ? `"${value.replace(/"/g, '""')}"` : value);

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { input: { type: 'string' }, out: { type: 'string' } } });
  if (!values.input || !values.out) throw new Error('--input FILE and --out FILE are required');

  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  let header: string[] | undefined;
  let emailIndex = 0;
  let rows = 0;
  let pending: string[] = [];
  const toCsv = new Transform({
    writableObjectMode: true,
    transform(cells: string[], _encoding, done) {
      if (header === undefined) {
        header = cells;
        emailIndex = Math.max(0, cells.findIndex((c) => c.trim().toLowerCase() === 'email'));
        done(null, [...cells, 'email_length'].map(cell).join(',') + '\n');
        return;
      }
      rows++;
      const result = (cells[emailIndex] ?? '').trim().toLowerCase().length;
      pending.push(cells.map(cell).join(',') + ',' + result);
      if (pending.length >= 1000) {
        const text = pending.join('\n') + '\n';
        pending = [];
        done(null, text);
      } else done();
    },
    flush(done) {
      done(null, pending.length > 0 ? pending.join('\n') + '\n' : undefined);
    },
  });
  await pipeline(
    fs.createReadStream(values.input, { encoding: 'utf8', highWaterMark: 256 * 1024 }),
    // No skipEmptyLines: papaparse would drop a quoted blank cell (`""`) with the blank lines, and the
    // one-column file has such rows, which Sluice keeps; the bench's inputs have no blank lines, and
    // the bench checks that the floor saw as many rows as the file has.
    Papa.parse(Papa.NODE_STREAM_INPUT),
    toCsv,
    fs.createWriteStream(values.out),
  );
  const wallMs = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  const result: FloorResult = {
    event: 'result',
    rows,
    wallMs: Math.round(wallMs * 10) / 10,
    outBytes: fs.statSync(values.out).size,
    cpuUserMs: Math.round(cpu.user / 1000),
    cpuSystemMs: Math.round(cpu.system / 1000),
    maxRssKiB: process.resourceUsage().maxRSS,
  };
  process.stdout.write(`${JSON.stringify(result)}\n`);
}

main().catch((e: unknown) => {
  process.stderr.write(`floor-run: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
  process.exit(1);
});
