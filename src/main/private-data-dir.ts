import fs from 'node:fs';
import path from 'node:path';

/** What Sluice itself keeps at the top of a data dir; anything else an operator put there is left alone. */
const OWN_ENTRIES = ['sluice.db', 'sluice.db-wal', 'sluice.db-shm', 'seal.key', 's3-credentials.json', 's3', 'data-keys'];

/** The sticky bit (S_ISVTX), which node's fs.constants does not name. */
const STICKY = 0o1000;

/** `shared`: the dir is readable by others and is not Sluice's to change (a sticky dir like /tmp, or another user's). */
export type DataDirAccess = 'private' | 'tightened' | 'shared';

/**
 * Makes the data dir readable by its owner only: it holds password hashes, raw addresses, uploads,
 * results and webhook payloads. A new dir is made 0700. One that an older Sluice made 0755 is
 * tightened to 0700, and Sluice's own files in it lose their group and other bits, once: after
 * that the dir is private and this walks nothing.
 */
export function privateDataDir(dir: string): DataDirAccess {
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  const stat = fs.statSync(dir);
  if ((stat.mode & 0o077) === 0) return 'private';
  // chmod on /tmp (sticky) would lock every other user out of it; another user's dir is theirs.
  if ((stat.mode & STICKY) !== 0 || stat.uid !== process.getuid?.()) return 'shared';
  fs.chmodSync(dir, 0o700);
  for (const name of OWN_ENTRIES) ownerOnly(path.join(dir, name));
  return 'tightened';
}

function ownerOnly(entry: string): void {
  let stat: fs.Stats;
  try {
    stat = fs.lstatSync(entry);
  } catch (e: unknown) {
    // A peer process may delete an object while this walks.
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  // chmod follows links: one planted in the dir must not turn it on a file elsewhere.
  if (stat.isSymbolicLink()) return;
  if ((stat.mode & 0o077) !== 0) fs.chmodSync(entry, stat.mode & 0o700);
  if (!stat.isDirectory()) return;
  let names: string[];
  try {
    names = fs.readdirSync(entry);
  } catch (e: unknown) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw e;
  }
  for (const name of names) ownerOnly(path.join(entry, name));
}
