import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { privateDataDir } from '../../src/main/private-data-dir.js';
import { writeGenderCsv } from '../support/csv-fixture.js';
import { cliEnv, killChildren, removeScratchDirs, runCli, scratchDir, spawnCli, workerReady, type CliChild } from '../support/cli-process.js';

/**
 * Another local user must read nothing of a data dir: it holds password hashes, raw addresses,
 * uploads, results and webhook payloads. Checked on real `sluice` processes, with a worker still
 * running so that SQLite's -wal and -shm files exist while the modes are read.
 */

let umaskBefore: number;
beforeAll(() => {
  // The usual umask: a developer whose own is 077 would otherwise see this pass without the fix.
  umaskBefore = process.umask(0o022);
});
afterAll(() => {
  process.umask(umaskBefore);
});
afterEach(async () => {
  await killChildren();
  removeScratchDirs();
});

/** Every entry under `dir` (links not followed) with its permission bits, in octal. */
function modesUnder(dir: string): Record<string, string> {
  const modes: Record<string, string> = { '.': (fs.statSync(dir).mode & 0o777).toString(8) };
  for (const entry of fs.readdirSync(dir, { recursive: true, encoding: 'utf8' })) {
    const stat = fs.lstatSync(path.join(dir, entry));
    if (!stat.isSymbolicLink()) modes[entry] = (stat.mode & 0o777).toString(8);
  }
  return modes;
}

function ownerOnly(modes: Record<string, string>, dir: string): Record<string, string> {
  return Object.fromEntries(Object.keys(modes).map((entry) => [entry, fs.lstatSync(path.join(dir, entry)).isDirectory() ? '700' : '600']));
}

async function startWorker(env: NodeJS.ProcessEnv): Promise<CliChild> {
  const worker = spawnCli(['worker'], env);
  await workerReady(worker);
  return worker;
}

async function runJob(input: string, outDir: string, env: NodeJS.ProcessEnv): Promise<void> {
  const run = await runCli(['run', input, '--out', outDir, '--json'], env);
  expect(run.code, run.stderr).toBe(0);
}

describe('data dir file modes', () => {
  it('a fresh data dir is 0700 and every file Sluice writes in it, database, WAL, objects and port file, is 0600', async () => {
    const root = scratchDir('sluice-modes-');
    // Not there yet, nor its parent: Sluice makes both.
    const dataDir = path.join(root, 'deploy', 'data');
    const env = cliEnv(dataDir, { SLUICE_POLL_MS: '20' });
    const input = await writeGenderCsv(root, 'in.csv', { rows: 300, seed: 16 });
    const worker = await startWorker(env);
    await runJob(input, path.join(root, 'out'), env);

    const modes = modesUnder(dataDir);
    for (const file of ['sluice.db', 'sluice.db-wal', 'sluice.db-shm', 's3/port', 'seal.key', 's3-credentials.json']) {
      expect(modes, `${file} is missing`).toHaveProperty([file]);
    }
    const objects = Object.keys(modes).filter((entry) => entry.startsWith(path.join('s3', 'buckets')) && fs.statSync(path.join(dataDir, entry)).isFile());
    // The input and the result files of the job, with s3rver's metadata beside each.
    expect(objects.length).toBeGreaterThanOrEqual(4);
    expect(modes).toEqual(ownerOnly(modes, dataDir));
    expect((fs.statSync(path.join(root, 'deploy')).mode & 0o777).toString(8)).toBe('700');
    expect(worker.child.exitCode).toBeNull();
  });

  it('a data dir an older Sluice left 0755 is tightened at start, its own files included, and nothing else is touched', async () => {
    const root = scratchDir('sluice-modes-');
    const dataDir = path.join(root, 'data');
    const env = cliEnv(dataDir, { SLUICE_POLL_MS: '20' });
    const input = await writeGenderCsv(root, 'in.csv', { rows: 300, seed: 17 });
    await runJob(input, path.join(root, 'out'), env);
    // What an older version left: every dir 0755, every file 0644.
    for (const [entry] of Object.entries(modesUnder(dataDir))) {
      const full = path.join(dataDir, entry);
      fs.chmodSync(full, fs.statSync(full).isDirectory() ? 0o755 : 0o644);
    }
    // The operator's file beside Sluice's, and a link out of the dir, must keep their modes.
    const notes = path.join(dataDir, 'notes.txt');
    const outside = path.join(root, 'outside.txt');
    fs.writeFileSync(notes, 'ours\n', { mode: 0o644 });
    fs.writeFileSync(outside, 'elsewhere\n', { mode: 0o644 });
    fs.symlinkSync(outside, path.join(dataDir, 's3', 'elsewhere'));

    await startWorker(env);

    const modes = modesUnder(dataDir);
    expect(modes).toHaveProperty(['sluice.db-wal']);
    const { 'notes.txt': notesMode, ...sluiceOwn } = modes;
    expect(notesMode).toBe('644');
    expect(sluiceOwn).toEqual(ownerOnly(sluiceOwn, dataDir));
    expect((fs.statSync(outside).mode & 0o777).toString(8)).toBe('644');
  });

  it('leaves a sticky shared dir such as /tmp as it is, and says so, rather than lock its other users out', () => {
    const shared = path.join(scratchDir('sluice-modes-'), 'shared');
    fs.mkdirSync(shared);
    fs.chmodSync(shared, 0o1777);
    expect(privateDataDir(shared)).toBe('shared');
    expect((fs.statSync(shared).mode & 0o7777).toString(8)).toBe('1777');
  });
});
