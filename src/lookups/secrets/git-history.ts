import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { AppError, ERROR_CODES } from '../../shared/errors.js';

/** One commit's changes: the lines each file gained, with their line numbers in the new file. */
export interface CommitChanges {
  sha: string;
  author: string;
  email: string;
  date: string;
  files: Array<{ path: string; added: string[]; lines: number[] }>;
}

export interface CloneOptions {
  readonly timeoutMs: number;
  readonly maxBytes: number;
  /** Plain http (loopback test servers); production clones over https only. */
  readonly allowHttp: boolean;
  /** host:port:address that git must connect to: the address the policy checked, so DNS cannot answer differently for git. */
  readonly pin?: string | undefined;
}

/** A file's added text is scanned up to this much per commit: as much as a pasted-content scan. */
const MAX_ADDED_PER_FILE = 256 * 1024;

/**
 * `git clone --bare` with no prompts, no hooks, no protocols but https (and http when allowed),
 * within a time and size limit: the directory is measured while git writes it, and git is
 * killed past either limit.
 */
export async function cloneBare(url: string, dir: string, options: CloneOptions): Promise<void> {
  const config = ['-c', 'protocol.allow=never', '-c', 'protocol.https.allow=always', '-c', 'core.hooksPath=/dev/null', '-c', 'credential.helper='];
  if (options.allowHttp) config.push('-c', 'protocol.http.allow=always');
  if (options.pin) config.push('-c', `http.curloptResolve=${options.pin}`);
  const child = spawn('git', [...config, 'clone', '--bare', '--quiet', '--', url, dir], {
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_TERMINAL_PROMPT: '0', GIT_CONFIG_NOSYSTEM: '1', HOME: dir, GIT_ASKPASS: '/bin/false' },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => {
    if (stderr.length < 2000) stderr += d.toString();
  });
  let killedFor: string | undefined;
  const timer = setTimeout(() => {
    killedFor = 'repository_timeout';
    child.kill('SIGKILL');
  }, options.timeoutMs);
  const sizer = setInterval(() => {
    if (dirBytes(dir) > options.maxBytes) {
      killedFor = 'repository_too_large';
      child.kill('SIGKILL');
    }
  }, 200);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  clearTimeout(timer);
  clearInterval(sizer);
  if (killedFor) throw new AppError(killedFor === 'repository_timeout' ? ERROR_CODES.repositoryTimeout : ERROR_CODES.repositoryTooLarge, `clone stopped: ${killedFor}`);
  if (code !== 0) throw new AppError(ERROR_CODES.cloneFailed, `git clone failed (${code})`, { cause: new Error(stderr.slice(0, 500)) });
  if (dirBytes(dir) > options.maxBytes) throw new AppError(ERROR_CODES.repositoryTooLarge, 'repository is larger than allowed');
}

function dirBytes(dir: string): number {
  let total = 0;
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const full = path.join(d, e.name);
      if (e.isDirectory()) walk(full);
      else {
        try {
          total += fs.statSync(full).size;
        } catch {
          // a file git removed meanwhile
        }
      }
    }
  };
  walk(dir);
  return total;
}

/**
 * Every commit reachable from any ref, oldest first, with the lines it added (`git log -p -U0`):
 * a secret added in one commit and deleted in the next is in the first one's additions. Merge
 * commits add nothing of their own here; their parents' commits carry the changes. Read as a
 * stream, one commit at a time.
 */
export async function* commitChanges(dir: string): AsyncGenerator<CommitChanges> {
  const child = spawn(
    'git',
    ['-c', 'core.quotePath=false', '--git-dir', dir, 'log', '--all', '--reverse', '--date-order', '-p', '-U0', '--no-color', '--no-ext-diff', '--format=%x01%H%x00%an%x00%ae%x00%aI'],
    { env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', HOME: dir }, stdio: ['ignore', 'pipe', 'ignore'] },
  );
  const lines = readline.createInterface({ input: child.stdout, crlfDelay: Infinity });
  let commit: CommitChanges | undefined;
  let file: { path: string; added: string[]; lines: number[]; bytes: number } | undefined;
  let inHunk = false;
  let next = 0;
  try {
    for await (const line of lines) {
      if (line.startsWith('\x01')) {
        if (commit) yield commit;
        const [sha = '', author = '', email = '', date = ''] = line.slice(1).split('\0');
        commit = { sha, author, email, date, files: [] };
        file = undefined;
        inHunk = false;
        continue;
      }
      if (!commit) continue;
      if (line.startsWith('diff --git ')) {
        inHunk = false;
        file = undefined;
        continue;
      }
      if (!inHunk && line.startsWith('+++ ')) {
        const target = line.slice(4);
        if (target !== '/dev/null') {
          file = { path: target.startsWith('b/') ? target.slice(2) : target, added: [], lines: [], bytes: 0 };
          commit.files.push(file);
        }
        continue;
      }
      if (line.startsWith('@@ ')) {
        const m = /^@@ -\d+(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
        next = m ? Number(m[1]) : 0;
        inHunk = true;
        continue;
      }
      if (inHunk && file && line.startsWith('+')) {
        if (file.bytes < MAX_ADDED_PER_FILE) {
          file.added.push(line.slice(1));
          file.lines.push(next);
          file.bytes += line.length;
        }
        next++;
      }
    }
    if (commit) yield commit;
  } finally {
    child.kill();
  }
}
