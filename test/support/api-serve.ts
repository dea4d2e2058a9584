import fs from 'node:fs';
import { cliEnv, parseJson, runCli, spawnCli, type CliChild } from './cli-process.js';

/** `sluice serve` in a child process, as an operator starts it, with the URL it printed. */
export interface ServeChild extends CliChild {
  baseUrl: string;
}

const LISTENING = /listening on (http:\/\/[^\s]+)/;

export async function startServe(dataDir: string, env: Record<string, string> = {}, args: string[] = [], timeoutMs = 20_000): Promise<ServeChild> {
  const child = spawnCli(['serve', '--port', '0', '--host', '127.0.0.1', ...args], cliEnv(dataDir, env));
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const match = LISTENING.exec(child.stderr());
    if (match) return { ...child, baseUrl: match[1]!.replace(/\/$/, '') };
    if (child.child.exitCode !== null || child.child.signalCode !== null) {
      throw new Error(`serve exited before listening (${child.child.exitCode ?? child.child.signalCode}): ${child.stderr()}`);
    }
    if (Date.now() > deadline) throw new Error(`serve not listening after ${timeoutMs} ms: ${child.stderr()}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** An account and an admin key made with the CLI in `dataDir`, before any server runs. */
export async function cliAccountWithKey(dataDir: string, credits: number, env: Record<string, string> = {}): Promise<{ accountId: string; key: string }> {
  const created = await runCli(['accounts', 'create', '--credits', String(credits), '--json'], cliEnv(dataDir, env));
  if (created.code !== 0) throw new Error(`accounts create failed: ${created.stderr}`);
  const accountId = parseJson(created).id as string;
  const key = await runCli(['keys', 'create', '--account', accountId, '--name', 'test', '--json'], cliEnv(dataDir, env));
  if (key.code !== 0) throw new Error(`keys create failed: ${key.stderr}`);
  return { accountId, key: parseJson(key).key as string };
}

/** Resident set size of a process, in bytes, from /proc (Linux). */
export function rssOf(pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  const match = /^VmRSS:\s+(\d+)\s+kB/m.exec(status);
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}
