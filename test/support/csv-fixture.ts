import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { generateGenderCsv, type GenderCsvOptions } from '../../fixtures/generate-gender-csv.js';
import { readCsvRows } from '../../src/jobs/csv-reader.js';

export async function writeGenderCsv(dir: string, name: string, options: GenderCsvOptions): Promise<string> {
  const file = path.join(dir, name);
  await pipeline(generateGenderCsv(options), fs.createWriteStream(file));
  return file;
}

/** Parses CSV text with the engine's own reader (quoted newlines and all). */
export async function parseCsv(text: string | Buffer): Promise<string[][]> {
  const rows: string[][] = [];
  async function* source() {
    yield Buffer.isBuffer(text) ? text : Buffer.from(text);
  }
  for await (const batch of readCsvRows(source(), { maxLineBytes: 1 << 20, delimiter: ',' })) rows.push(...batch);
  return rows;
}

/** Result rows as objects keyed by the output header. */
export async function resultRecords(text: string | Buffer): Promise<Record<string, string>[]> {
  const [header, ...rows] = await parseCsv(text);
  return rows.map((cells) => Object.fromEntries(header!.map((name, i) => [name, cells[i] ?? ''])));
}
