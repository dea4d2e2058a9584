import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { ownerDead } from '../../src/jobs/job-activity.js';

/**
 * Issue 33: `sluice run FILE & sleep 30; kill -9 $!; sluice jobs resume ID --wait` was refused 1 time
 * in 3 ("cannot be resumed: it is running"), and `jobs show` said `stalled: false` for about a lease
 * time after. A process killed with -9 stays a zombie until its parent (the shell) reaps it, and a
 * zombie still answers `kill(pid, 0)`: its leases read as a live worker's. A zombie runs nothing.
 */
const parents: ChildProcess[] = [];
afterEach(() => {
  for (const p of parents.splice(0)) p.kill('SIGKILL');
});

/** A killed process that its parent never reaps: `sh` execs into `sleep`, which never waits. */
async function zombie(): Promise<number> {
  const parent = spawn('sh', ['-c', 'sleep 60 & echo $!; exec sleep 60'], { stdio: ['ignore', 'pipe', 'ignore'] });
  parents.push(parent);
  const pid = await new Promise<number>((resolve) => parent.stdout!.once('data', (b: Buffer) => resolve(Number(b.toString().trim()))));
  process.kill(pid, 'SIGKILL');
  for (let i = 0; i < 100 && !/\) Z/.test(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')); i++) await new Promise((r) => setTimeout(r, 20));
  return pid;
}

describe.runIf(process.platform === 'linux')('a lease owner killed with -9 and not yet reaped', () => {
  it('is dead, though kill(pid, 0) still finds it', async () => {
    const pid = await zombie();
    expect(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')).toMatch(/\) Z /);
    expect(() => process.kill(pid, 0)).not.toThrow();
    expect(ownerDead(`${os.hostname()}:${pid}:abc`)).toBe(true);
  });

  it('a live process of this host is not dead', () => {
    const live = parents[0]?.pid ?? process.ppid;
    expect(ownerDead(`${os.hostname()}:${live}:abc`)).toBe(false);
  });
});
