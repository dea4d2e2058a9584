import os from 'node:os';

/** One line of the results table: a scenario's headline figure against its target. */
export interface Row {
  scenario: string;
  figure: string;
  target: string;
  /** `met`, `NOT met`, `n/a` (no target or nothing to measure) or `failed`. */
  met: string;
  detail: string;
}

export interface Report {
  title: string;
  started: Date;
  durationMs: number;
  rows: number;
  commit: string;
  loadStart: number[];
  loadEnd: number[];
  settings: string[];
  command: string;
  table: Row[];
  /** Markdown sections after the table (details, profile). */
  sections: string[];
  /** Bullets of "What the numbers say". */
  findings: string[];
}

export const MiB = 1024 * 1024;

export const fmt = {
  int: (n: number): string => Math.round(n).toLocaleString('en-US'),
  s: (ms: number): string => `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`,
  mb: (bytes: number): string => `${(bytes / MiB).toFixed(0)} MB`,
  x: (ratio: number): string => `${ratio.toFixed(2)}×`,
  pct: (share: number): string => `${(share * 100).toFixed(1)}%`,
};

export function verdict(ok: boolean): string {
  return ok ? 'met' : 'NOT met';
}

/** A ratio where lower is better, against its target and the aim below it. */
export function ratioVerdict(ratio: number, target: number, aim: number): string {
  return ratio <= aim ? 'met (and the aim)' : verdict(ratio <= target);
}

const cellText = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

export function markdownTable(header: string[], lines: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...lines.map((l) => `| ${l.map(cellText).join(' | ')} |`)].join('\n');
}

export function renderReport(r: Report): string {
  const cpus = os.cpus();
  const load = (l: number[]): string => l.map((v) => v.toFixed(2)).join(', ');
  const lines = [
    `# ${r.title}`,
    '',
    `- Machine: ${cpus[0]?.model ?? 'unknown CPU'}, ${cpus.length} cores, ${(os.totalmem() / 1024 ** 3).toFixed(1)} GiB memory, ${os.platform()} ${os.release()}`,
    `- Node ${process.version}; commit ${r.commit}`,
    `- Date: ${r.started.toISOString()}; the bench took ${(r.durationMs / 60_000).toFixed(1)} min`,
    `- Load average (1, 5, 15 min) at the start: ${load(r.loadStart)}; at the end: ${load(r.loadEnd)}. Other work on the machine slows every figure; the ratios suffer less, since both sides of each ratio ran under the same load.`,
    `- Settings: ${r.settings.length === 0 ? 'Sluice defaults (no SLUICE_* overrides)' : r.settings.join(', ')}`,
    '',
    markdownTable(
      ['scenario', 'figure', 'target', 'met?', 'details'],
      r.table.map((row) => [row.scenario, row.figure, row.target, row.met, row.detail]),
    ),
    '',
    ...r.sections.flatMap((s) => [s, '']),
    '## What the numbers say',
    '',
    ...r.findings.map((f) => `- ${f}`),
    '',
    'What each change to the defaults bought, with the runs that decided it: [OPTIMISATIONS.md](OPTIMISATIONS.md).',
    '',
    '## Reproduce',
    '',
    '```sh',
    r.command,
    '```',
    '',
  ];
  return lines.join('\n');
}
