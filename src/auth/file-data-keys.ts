import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { checkDataKeyName, endOf, newDataKey, unwrapDataKey, wrapDataKey, type DataKeyRing } from './data-keys.js';

/**
 * Data keys as files in one folder of the data dir (the SQLite store's ring): every process on the
 * data dir shares them. Destroying one overwrites its bytes with zeros and syncs before unlinking
 * it, so no file under the data dir still holds it (what the file system does with freed blocks
 * is the disk's encryption's to cover, see docs/security.md).
 */
export class FileDataKeys implements DataKeyRing {
  constructor(
    private readonly dir: string,
    private readonly sealKey: Buffer,
  ) {}

  async obtain(name: string): Promise<Buffer> {
    const existing = await this.read(name);
    if (existing) return existing;
    fs.mkdirSync(this.dir, { recursive: true, mode: 0o700 });
    const key = newDataKey();
    // Written whole under a temporary name, then linked into place: link fails if another process
    // got there first, and no reader ever sees a half-written key.
    const temp = path.join(this.dir, `.${randomBytes(8).toString('hex')}.tmp`);
    fs.writeFileSync(temp, wrapDataKey(key, this.sealKey), { mode: 0o600, flag: 'wx' });
    try {
      fs.linkSync(temp, this.file(name));
      return key;
    } catch (e: unknown) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
      const theirs = await this.read(name);
      if (!theirs) throw new Error(`data key ${name} vanished while being made`);
      return theirs;
    } finally {
      fs.unlinkSync(temp);
    }
  }

  async read(name: string): Promise<Buffer | undefined> {
    let text: string;
    try {
      text = fs.readFileSync(this.file(name), 'utf8');
    } catch (e: unknown) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
      throw e;
    }
    // A key being destroyed reads as zeros: it is gone.
    return text.length === 0 || text.charCodeAt(0) === 0 ? undefined : unwrapDataKey(text, this.sealKey);
  }

  async destroy(name: string): Promise<void> {
    const file = this.file(name);
    let fd: number;
    try {
      fd = fs.openSync(file, 'r+');
    } catch (e: unknown) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return;
      throw e;
    }
    try {
      fs.writeSync(fd, Buffer.alloc(fs.fstatSync(fd).size), 0, undefined, 0);
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
    fs.rmSync(file, { force: true });
  }

  async expiring(): Promise<string[]> {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir);
    } catch (e: unknown) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    return names.filter((n) => n.endsWith('.key')).map((n) => n.slice(0, -'.key'.length)).filter((n) => endOf(n) !== undefined);
  }

  private file(name: string): string {
    return path.join(this.dir, `${checkDataKeyName(name)}.key`);
  }
}
