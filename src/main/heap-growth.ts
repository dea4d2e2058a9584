import v8 from 'node:v8';

/**
 * How far V8 lets the old space grow past what the last full collection kept before it collects
 * again. Left to itself, V8 picks a factor of up to 4 when collections are cheap, and a job's
 * garbage is cheap to collect: chunk text and batch rows live long enough to be promoted, then die
 * together. On a 1M-row job that let the heap swell to about 170 MB around 50 MB of live data.
 * V8 reads the flag at every full collection, so setting it once at start-up is enough; 0 leaves
 * V8's own choice. Measured in bench/OPTIMISATIONS.md (22 Nov 2026 section).
 */
export function applyHeapGrowth(percent: number): void {
  if (percent > 0) v8.setFlagsFromString(`--heap-growing-percent=${percent}`);
}
