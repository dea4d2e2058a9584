import type { JobSummary } from '../jobs/job-summary.js';
import { formatSeconds } from './format-job.js';

export interface ProgressReporter {
  update(summary: JobSummary): void;
  /** Prints the final state, whatever the throttle says, and ends the line. */
  done(summary: JobSummary): void;
}

/**
 * On a terminal: one redrawn line with a bar, rows per second and time left. Elsewhere (CI, pipes,
 * log files): a plain line every few seconds, so logs stay readable.
 */
export function progressReporter(out: NodeJS.WriteStream, now: () => number = Date.now): ProgressReporter {
  const started = now();
  // Rows done before this run (a resumed job) are not this run's speed.
  let baseline: number | undefined;
  let lastPlain = 0;
  let lastLine = '';
  let drawn = false;
  return {
    update(summary) {
      baseline ??= summary.rows.processed;
      const line = describe(summary, (now() - started) / 1000, baseline);
      if (out.isTTY) {
        out.write(`\r${line.padEnd(out.columns ? Math.min(out.columns - 1, 120) : 100)}`);
        drawn = true;
      } else if (now() - lastPlain >= 2000) {
        out.write(`${line}\n`);
        lastPlain = now();
        lastLine = line;
      }
    },
    done(summary) {
      // A tick may already have printed the final state (`failed: no_key_column`); a log says it once.
      if (!out.isTTY && describe(summary, (now() - started) / 1000, baseline) === lastLine) return;
      lastPlain = 0;
      this.update(summary);
      if (drawn) out.write('\n');
    },
  };
}

/** `fromRows`: the rows processed when the run began, left out of the rate. */
export function describe(summary: JobSummary, seconds: number, fromRows = 0): string {
  const { processed, total } = summary.rows;
  if (summary.status === 'failed' || summary.status === 'cancelled') return `${summary.status}: ${summary.reason ?? ''}`;
  if (total === null) return `${summary.status}: reading and checking the file...`;
  const width = 24;
  const filled = Math.round((Math.min(summary.percent, 100) / 100) * width);
  const rate = seconds > 0 ? Math.max(0, processed - fromRows) / seconds : 0;
  const left = rate > 0 ? Math.max(0, (total - processed) / rate) : undefined;
  return [
    `[${'#'.repeat(filled)}${'.'.repeat(width - filled)}]`,
    `${summary.percent.toFixed(1)}%`,
    `${processed.toLocaleString('en-US')}/${total.toLocaleString('en-US')} rows`,
    `${Math.round(rate).toLocaleString('en-US')} rows/s`,
    left === undefined ? '' : `${formatSeconds(left)} left`,
  ]
    .filter(Boolean)
    .join('  ');
}
