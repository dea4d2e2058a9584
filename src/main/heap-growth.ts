import v8 from 'node:v8';

/**
 * How far V8 lets the old space grow past what the last full collection kept before it collects
 * again. Left to itself, V8 picks a factor of up to 4 when collections are cheap, as a job's are:
 * most of what it promotes dies soon after. On a 1M-row job that let RSS reach about 320 MB around
 * 50 MB of live data; at most doubling holds it near 275 MB at no measurable cost, where 50% held
 * 255 MB but slowed a repeat run by a tenth. V8 reads the flag at every full collection, so
 * setting it once at start-up is enough; 0 leaves V8's own choice. Measured in
 * bench/OPTIMISATIONS.md (22 Nov 2026 section).
 */
export function applyHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
