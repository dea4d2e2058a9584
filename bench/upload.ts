import fs from 'node:fs';
import { Readable } from 'node:stream';
import { request } from 'undici';
import { childEnv, CLI, runNode, rssOf, startNode, stopChild, tail, type Child } from './children.js';

export interface UploadResult {
  bytes: number;
  seconds: number;
  mbPerSecond: number;
  status: number;
  jobId: string;
  rssBefore: number;
  rssPeak: number;
  rssGrowth: number;
  samples: number;
}

const MB = 1024 * 1024;

/** A multipart/form-data body streamed from disk: the fields, then the file part, then the closing boundary. */
function multipartBody(fields: Record<string, string>, file: string, filename: string, range?: { end: number }): { body: Readable; contentType: string } {
  const boundary = `----sluice-bench-${Math.random().toString(16).slice(2)}`;
  async function* parts(): AsyncGenerator<Buffer> {
    for (const [name, value] of Object.entries(fields)) {
      yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`);
    }
    yield Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${filename}"\r\nContent-Type: text/csv\r\n\r\n`);
    for await (const chunk of fs.createReadStream(file, { highWaterMark: 256 * 1024, ...(range ? { end: range.end } : {}) })) yield chunk as Buffer;
    yield Buffer.from(`\r\n--${boundary}--\r\n`);
  }
  return { body: Readable.from(parts(), { objectMode: false }), contentType: `multipart/form-data; boundary=${boundary}` };
}

async function post(baseUrl: string, key: string, file: string, range?: { end: number }): Promise<{ status: number; text: string }> {
  const { body, contentType } = multipartBody({ type: 'gender' }, file, 'bench.csv', range);
  const response = await request(`${baseUrl}/api/jobs/bulk`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': contentType },
    body,
    headersTimeout: 600_000,
    bodyTimeout: 600_000,
  });
  return { status: response.statusCode, text: await response.body.text() };
}

async function cliJson(args: string[], dataDir: string, env: Record<string, string>): Promise<Record<string, unknown>> {
  const out = await runNode(CLI, args, childEnv(dataDir, env));
  try {
    return JSON.parse(out) as Record<string, unknown>;
  } catch {
    throw new Error(`sluice ${args.join(' ')} printed no JSON document:\n${tail(out)}`);
  }
}

async function listening(server: Child, timeoutMs = 30_000): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = /listening on (http:\/\/\S+)/.exec(server.stderr());
    if (match) return match[1]!.replace(/\/$/, '');
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`sluice serve exited before listening:\n${tail(server.stderr())}`);
    }
    if (Date.now() > deadline) throw new Error(`sluice serve not listening after ${timeoutMs} ms:\n${tail(server.stderr())}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * The file through `POST /api/jobs/bulk` to a `sluice serve --no-worker` child over a real socket.
 * One small upload first warms the paths an upload takes (multipart, S3 client, job insert), so that
 * the growth measured is the big upload's, not first-use module loading. VmRSS is sampled every
 * 100 ms from just before the upload until its response has arrived.
 */
export async function measureUpload(dataDir: string, file: string, rows: number, env: Record<string, string>): Promise<UploadResult> {
  const account = await cliJson(['accounts', 'create', '--credits', String(2 * rows + 1000), '--json'], dataDir, env);
  const accountId = String(account.id);
  const created = await cliJson(['keys', 'create', '--account', accountId, '--name', 'bench', '--json'], dataDir, env);
  const key = String(created.key);

  const server = startNode(CLI, ['serve', '--port', '0', '--host', '127.0.0.1', '--no-worker'], childEnv(dataDir, env));
  try {
    const baseUrl = await listening(server);
    const pid = server.child.pid!;
    const warm = await post(baseUrl, key, file, { end: 64 * 1024 - 1 });
    if (warm.status !== 202) throw new Error(`warm-up upload answered ${warm.status}: ${warm.text.slice(0, 300)}`);
    await new Promise((r) => setTimeout(r, 500));

    const bytes = fs.statSync(file).size;
    const rssBefore = rssOf(pid) ?? 0;
    let rssPeak = rssBefore;
    let samples = 0;
    const sampler = setInterval(() => {
      const rss = rssOf(pid);
      if (rss !== undefined) {
        samples++;
        rssPeak = Math.max(rssPeak, rss);
      }
    }, 100);
    const t0 = performance.now();
    let answer: { status: number; text: string };
    try {
      answer = await post(baseUrl, key, file);
    } finally {
      clearInterval(sampler);
    }
    const seconds = (performance.now() - t0) / 1000;
    rssPeak = Math.max(rssPeak, rssOf(pid) ?? 0);
    if (answer.status !== 202) throw new Error(`upload answered ${answer.status}: ${answer.text.slice(0, 300)}`);
    const job = JSON.parse(answer.text) as { id: string };
    return {
      bytes,
      seconds,
      mbPerSecond: bytes / MB / seconds,
      status: answer.status,
      jobId: job.id,
      rssBefore,
      rssPeak,
      rssGrowth: rssPeak - rssBefore,
      samples,
    };
  } finally {
    await stopChild(server);
  }
}
