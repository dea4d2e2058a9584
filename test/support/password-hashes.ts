import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

/** A SHA-1 hex, uppercase, as HIBP writes it. */
export function sha1Hex(text: string): string {
  return createHash('sha1').update(text, 'utf8').digest('hex').toUpperCase();
}

/**
 * `n` distinct generated hashes with counts, sorted as the HIBP downloader writes them. Each is the
 * SHA-1 of `generated-<seed>-<i>`, so a test can find any of them again; counts 1..1000.
 */
export function generatedHashes(n: number, seed = 'x'): { hash: string; count: number }[] {
  const rows = Array.from({ length: n }, (_, i) => ({ hash: sha1Hex(`generated-${seed}-${i}`), count: 1 + (i % 1000) }));
  return rows.sort((a, b) => (a.hash < b.hash ? -1 : a.hash > b.hash ? 1 : 0));
}

/** The combined file: `SHA1:COUNT` lines, CRLF, as the downloader's single-file output. */
export function writeCombined(file: string, rows: readonly { hash: string; count: number }[]): string {
  fs.writeFileSync(file, rows.map((r) => `${r.hash}:${r.count}\r\n`).join(''));
  return file;
}

/** One `ABCDE.txt` file of `SUFFIX:COUNT` lines per prefix, as the downloader's per-prefix output. */
export function writePrefixDir(dir: string, rows: readonly { hash: string; count: number }[]): string {
  fs.mkdirSync(dir, { recursive: true });
  const byPrefix = new Map<string, string[]>();
  for (const r of rows) {
    const lines = byPrefix.get(r.hash.slice(0, 5)) ?? [];
    lines.push(`${r.hash.slice(5)}:${r.count}`);
    byPrefix.set(r.hash.slice(0, 5), lines);
  }
  for (const [prefix, lines] of byPrefix) fs.writeFileSync(path.join(dir, `${prefix}.txt`), lines.join('\r\n'));
  return dir;
}
