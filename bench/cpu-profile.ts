import fs from 'node:fs';

/** The parts of a V8 `.cpuprofile` (what `node --cpu-prof` writes) that the summary reads. */
interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface ProfileEntry {
  name: string;
  ms: number;
  share: number;
}

export interface ProfileSummary {
  /** Sampled time inside the window, in milliseconds. */
  totalMs: number;
  /** Whether the samples could be cut to the worker's run (else the whole process is summarised). */
  windowed: boolean;
  /** Heaviest functions by self time. Native functions are named with their JavaScript caller. */
  top: ProfileEntry[];
  /** Self time by where the code lives: a package, Sluice's own layers, Node, V8. */
  byArea: ProfileEntry[];
}

const SPECIAL = new Set(['(root)', '(program)', '(idle)', '(garbage collector)']);

/** Shortens a script URL to `package/file` or `src/dir/file`, with the line. */
function where(url: string, line: number): string {
  if (url === '') return '';
  const clean = url.replace(/^file:\/\//, '');
  const nm = clean.lastIndexOf('node_modules/');
  let short: string;
  if (nm >= 0) short = clean.slice(nm + 'node_modules/'.length);
  else if (clean.includes('/dist/')) short = clean.slice(clean.lastIndexOf('/dist/') + '/dist/'.length);
  else short = clean;
  return `${short}:${line + 1}`;
}

/** Sluice files whose functions are thin wrappers over SQLite statements. */
const STORE_FILES = ['src/jobs/job-store.js', 'src/billing/billing-store.js', 'src/lookups/result-cache.js', 'src/auth/key-store.js'];
const OBJECT_STORE_PACKAGES = /^(@aws-sdk|@smithy|@aws-crypto|s3rver|koa|koa-.*|xmlbuilder|xmlbuilder2|fast-xml-parser|xml2js|sax|busboy|statuses|http-errors|mime-types?|uuid|lodash)$/;

/**
 * Where the time went, by technology rather than by file: SQLite (better-sqlite3 and the store
 * classes that wrap its statements), the object store (AWS SDK client and the embedded s3rver),
 * CSV parsing, the gender lookups, the rest of Sluice by layer, Node, V8.
 */
function area(url: string, name: string): string {
  if (SPECIAL.has(name)) return name;
  const file = url.replace(/^file:\/\//, '');
  if (file.endsWith('better-sqlite3/lib/methods/transaction.js')) return 'SQLite: BEGIN/COMMIT (better-sqlite3 transaction wrapper; WAL writes and checkpoints)';
  if (file.includes('node_modules/better-sqlite3/') || STORE_FILES.some((f) => file.endsWith(`/dist/${f}`))) return 'SQLite: statements (store classes: job-store, billing-store, result-cache)';
  if (file.includes('node_modules/papaparse/') || file.endsWith('/dist/src/jobs/csv-reader.js')) return 'CSV parsing (papaparse, csv-reader)';
  if (file.includes('node_modules/gender-detection-from-name/') || file.includes('/dist/src/lookups/gender/')) return 'gender lookups (name lists, first-name rules)';
  if (file.includes('/dist/src/storage/s3/')) return 'object store: AWS SDK client and embedded s3rver';
  if (url === '') return 'native functions with a frame of their own (fs bindings, RegExp, V8 builtins)';
  const clean = url.replace(/^file:\/\//, '');
  const nm = clean.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const rest = clean.slice(nm + 'node_modules/'.length).split('/');
    if (OBJECT_STORE_PACKAGES.test(rest[0]!)) return 'object store: AWS SDK client and embedded s3rver';
    return rest[0]!.startsWith('@') ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (clean.startsWith('node:')) return 'Node.js internals (streams, http, fs)';
  const dist = clean.lastIndexOf('/dist/');
  if (dist >= 0) {
    const parts = clean.slice(dist + '/dist/'.length).split('/');
    if (parts[0] === 'src') return `other Sluice code: src/${parts[1]}`;
    return `sluice ${parts[0]}`;
  }
  return 'other';
}

/**
 * Self time per function from the samples between `fromUs` and `toUs` (V8's profiler clock is the
 * monotonic clock that `process.hrtime` reads, so the worker's start and end can cut the profile).
 */
export function summariseProfile(file: string, window?: { fromUs: number; toUs: number }, topN = 15): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id);

  const windowed = window !== undefined && window.fromUs >= profile.startTime - 1_000_000 && window.toUs <= profile.endTime + 1_000_000;
  const selfUs = new Map<number, number>();
  let t = profile.startTime;
  for (let i = 0; i < profile.samples.length; i++) {
    t += profile.timeDeltas[i] ?? 0;
    // A sample stands for the interval up to the next one.
    const span = profile.timeDeltas[i + 1] ?? 0;
    if (windowed && (t < window.fromUs || t > window.toUs)) continue;
    const id = profile.samples[i]!;
    selfUs.set(id, (selfUs.get(id) ?? 0) + span);
  }

  const functions = new Map<string, number>();
  const areas = new Map<string, number>();
  let totalUs = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node) continue;
    totalUs += us;
    const { functionName, url, lineNumber } = node.callFrame;
    const name = functionName || '(anonymous)';
    let key: string;
    if (SPECIAL.has(name)) key = name;
    else if (url === '') {
      // A native function with a frame of its own (an fs binding, a RegExp, a V8 builtin): its caller says what it was for.
      let up = parent.get(id);
      let caller = up === undefined ? undefined : byId.get(up);
      while (caller && caller.callFrame.url === '' && !SPECIAL.has(caller.callFrame.functionName)) {
        up = parent.get(caller.id);
        caller = up === undefined ? undefined : byId.get(up);
      }
      const from = caller ? `${caller.callFrame.functionName || '(anonymous)'} ${where(caller.callFrame.url, caller.callFrame.lineNumber)}` : '?';
      key = `${name} (native) ← ${from}`;
    } else key = `${name} ${where(url, lineNumber)}`;
    functions.set(key, (functions.get(key) ?? 0) + us);
    const a = area(url, name);
    areas.set(a, (areas.get(a) ?? 0) + us);
  }
  const rank = (m: Map<string, number>, n: number): ProfileEntry[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, n)
      .map(([name, us]) => ({ name, ms: us / 1000, share: totalUs === 0 ? 0 : us / totalUs }));
  return { totalMs: totalUs / 1000, windowed, top: rank(functions, topN), byArea: rank(areas, 12) };
}
