import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface MigrationFile {
  version: number;
  name: string;
  sql: string;
}

/**
 * An adapter's numbered `NNN-name.sql` files, in order. `dirUrl` is the adapter's own
 * `new URL('./migrations/', import.meta.url)`; tsc does not copy .sql files, so from dist/ they
 * are read from the source tree.
 */
export function migrationFiles(dirUrl: URL): MigrationFile[] {
  const dir = sourceDir(fileURLToPath(dirUrl));
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{3}-[\w-]+\.sql$/.test(f))
    .sort()
    .map((name) => ({ version: Number(name.slice(0, 3)), name, sql: fs.readFileSync(path.join(dir, name), 'utf8') }));
}

function sourceDir(dir: string): string {
  if (fs.existsSync(dir)) return dir;
  const marker = `${path.sep}dist${path.sep}`;
  const at = dir.lastIndexOf(marker);
  return at < 0 ? dir : dir.slice(0, at) + path.sep + dir.slice(at + marker.length);
}
