/**
 * Preloaded into a child the bench times from outside (`node --import dist/bench/exit-usage.js ...`):
 * at exit, writes the process's own CPU time and peak RSS to $BENCH_EXIT_USAGE_FILE as one JSON
 * object. From outside, /proc/PID is gone by the time the exit is seen, and sampling it misses
 * the last moments, where `sluice run` writes its result files.
 */
import fs from 'node:fs';

export interface ExitUsage {
  cpuUserMs: number;
  cpuSystemMs: number;
  maxRssKiB: number;
}

const file = process.env.BENCH_EXIT_USAGE_FILE;
if (file) {
  process.once('exit', () => {
    const usage = process.resourceUsage();
    const result: ExitUsage = { cpuUserMs: Math.round(usage.userCPUTime / 1000), cpuSystemMs: Math.round(usage.systemCPUTime / 1000), maxRssKiB: usage.maxRSS };
    fs.writeFileSync(file, JSON.stringify(result));
  });
}
