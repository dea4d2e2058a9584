import fs from 'node:fs';
import path from 'node:path';

/**
 * A secret made once per data dir and shared by every process on it: the first process writes it
 * (exclusively, readable by this user only), the others read it. A reader that comes in between
 * the create and the write waits a moment for the content.
 */
export function dataDirSecret(dataDir: string, name: string, make: () => string): string {
  const file = path.join(dataDir, name);
  try {
    const fresh = make();
    fs.writeFileSync(file, fresh, { flag: 'wx', mode: 0o600 });
    return fresh;
  } catch (e: unknown) {
    if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
  }
  for (let attempt = 0; ; attempt++) {
    const text = fs.readFileSync(file, 'utf8');
    if (text.length > 0) return text;
    if (attempt > 50) throw new Error(`${file} is empty; delete it to make a new secret`);
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10);
  }
}
