import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';

/**
 * A git server on loopback: `git http-backend` (git's own smart-HTTP CGI) behind a small HTTP
 * server on port 0, serving every bare repository under `root`. The client under test is real git,
 * so the fake must speak the real protocol rather than replay canned bytes.
 */
export async function startGitHttpServer(
  root: string,
): Promise<{ url: (repo: string) => string; requests: string[]; hold: () => void; release: () => void; close: () => Promise<void> }> {
  const backend = path.join(execFileSync('git', ['--exec-path'], { encoding: 'utf8' }).trim(), 'git-http-backend');
  const requests: string[] = [];
  // While held, requests are counted but not answered: a clone in progress that a test can kill.
  let gate: { promise: Promise<void>; open: () => void } | undefined;
  const server = http.createServer(async (req, res) => {
    const [pathname = '/', query = ''] = (req.url ?? '/').split('?');
    requests.push(`${req.method} ${pathname}`);
    if (gate) await gate.promise;
    const cgi = spawn(backend, [], {
      env: {
        PATH: process.env.PATH,
        GIT_PROJECT_ROOT: root,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: pathname,
        QUERY_STRING: query,
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_ADDR: '127.0.0.1',
        ...(req.headers['content-encoding'] ? { HTTP_CONTENT_ENCODING: String(req.headers['content-encoding']) } : {}),
        ...(req.headers['git-protocol'] ? { GIT_PROTOCOL: String(req.headers['git-protocol']) } : {}),
      },
      stdio: ['pipe', 'pipe', 'ignore'],
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let headersDone = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (headersDone) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end === -1) return;
      headersDone = true;
      let status = 200;
      for (const line of head.subarray(0, end).toString().split('\r\n')) {
        const at = line.indexOf(':');
        const name = line.slice(0, at).trim();
        const value = line.slice(at + 1).trim();
        if (name.toLowerCase() === 'status') status = Number(value.split(' ')[0]);
        else res.setHeader(name, value);
      }
      res.writeHead(status);
      res.write(head.subarray(end + 4));
    });
    cgi.stdout.on('end', () => res.end());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: (repo) => `http://127.0.0.1:${port}/${repo}`,
    requests,
    hold: () => {
      let open = () => undefined as void;
      const promise = new Promise<void>((resolve) => (open = resolve));
      gate = { promise, open };
    },
    release: () => {
      gate?.open();
      gate = undefined;
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A work tree where each `commit` writes files (null deletes) with a fixed author and date. */
export function gitRepo(dir: string) {
  fs.mkdirSync(dir, { recursive: true });
  const git = (args: string[], env: Record<string, string> = {}) =>
    execFileSync('git', args, { cwd: dir, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1', ...env } }).trim();
  git(['init', '--quiet', '--initial-branch=main']);
  let n = 0;
  return {
    git,
    commit(files: Record<string, string | null>, message: string, author = { name: 'Dev One', email: 'dev1@example.com' }): string {
      for (const [name, content] of Object.entries(files)) {
        const file = path.join(dir, name);
        if (content === null) fs.rmSync(file);
        else {
          fs.mkdirSync(path.dirname(file), { recursive: true });
          fs.writeFileSync(file, content);
        }
      }
      git(['add', '-A']);
      const date = `2026-01-${String(++n).padStart(2, '0')}T10:00:00+00:00`;
      git(['-c', 'commit.gpgsign=false', 'commit', '--quiet', '-m', message], {
        GIT_AUTHOR_NAME: author.name,
        GIT_AUTHOR_EMAIL: author.email,
        GIT_AUTHOR_DATE: date,
        GIT_COMMITTER_NAME: author.name,
        GIT_COMMITTER_EMAIL: author.email,
        GIT_COMMITTER_DATE: date,
      });
      return git(['rev-parse', 'HEAD']);
    },
    /** A bare copy under `root` as `name`, for the server. */
    publish(root: string, name: string): void {
      execFileSync('git', ['clone', '--bare', '--quiet', dir, path.join(root, name)], { env: { PATH: process.env.PATH, HOME: dir, GIT_CONFIG_NOSYSTEM: '1' } });
    },
  };
}
