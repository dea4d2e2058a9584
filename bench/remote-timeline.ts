/**
 * How many requests were in flight over time, integrated exactly at every change (a sampling timer
 * would miss the short dips between batches, and compete with the timers it measures). Bins are on
 * process.hrtime, which is CLOCK_MONOTONIC on Linux: the same clock in every process, so the
 * simulator's timeline can be cut to the engine child's phases.
 */
export interface InFlightTimeline {
  /** hrtime in microseconds where bin 0 starts. */
  originUs: number;
  binUs: number;
  /** The level counted as full (the in-flight limit). */
  full: number;
  /** Per bin: requests in flight integrated over time (request-microseconds); / binUs is the mean. */
  area: number[];
  /** Per bin: microseconds with at least `full` requests in flight. */
  fullUs: number[];
  /** Per bin: microseconds with none in flight. */
  zeroUs: number[];
  /** Per bin: requests that ended. */
  done: number[];
}

export interface WindowStats {
  ms: number;
  /** Time-weighted mean of the requests in flight. */
  mean: number;
  fullShare: number;
  zeroShare: number;
  done: number;
}

export const hrtimeUs = (): number => Number(process.hrtime.bigint() / 1000n);

export class InFlightRecorder {
  readonly timeline: InFlightTimeline;
  private level = 0;
  private last = 0;

  constructor(full: number, binMs = 10) {
    this.timeline = { originUs: hrtimeUs(), binUs: binMs * 1000, full, area: [], fullUs: [], zeroUs: [], done: [] };
  }

  get inFlight(): number {
    return this.level;
  }

  set inFlight(level: number) {
    const now = this.advance();
    if (level < this.level) add(this.timeline.done, Math.floor(now / this.timeline.binUs), this.level - level);
    this.level = level;
  }

  /** Brings the bins up to now; call before reading the timeline. */
  advance(): number {
    const { binUs, full, area, fullUs, zeroUs, done } = this.timeline;
    const now = hrtimeUs() - this.timeline.originUs;
    while (this.last < now) {
      const bin = Math.floor(this.last / binUs);
      const step = Math.min(now, (bin + 1) * binUs) - this.last;
      add(area, bin, this.level * step);
      add(fullUs, bin, this.level >= full ? step : 0);
      add(zeroUs, bin, this.level === 0 ? step : 0);
      add(done, bin, 0);
      this.last += step;
    }
    return now;
  }
}

function add(list: number[], bin: number, value: number): void {
  while (list.length <= bin) list.push(0);
  list[bin] = list[bin]! + value;
}

/** The timeline between two hrtimes (microseconds); bins cut by the edges count in proportion. */
export function windowStats(t: InFlightTimeline, fromUs: number, toUs: number): WindowStats {
  let area = 0;
  let full = 0;
  let zero = 0;
  let done = 0;
  for (let bin = 0; bin < t.area.length; bin++) {
    const start = t.originUs + bin * t.binUs;
    const share = Math.max(0, Math.min(toUs, start + t.binUs) - Math.max(fromUs, start)) / t.binUs;
    if (share === 0) continue;
    area += t.area[bin]! * share;
    full += t.fullUs[bin]! * share;
    zero += t.zeroUs[bin]! * share;
    done += t.done[bin]! * share;
  }
  const span = Math.max(1, toUs - fromUs);
  return { ms: span / 1000, mean: area / span, fullShare: full / span, zeroShare: zero / span, done: Math.round(done) };
}

/** Mean time a request spent in flight over the whole timeline, in milliseconds (Little's law: area / requests). */
export function meanRequestMs(t: InFlightTimeline): number {
  const requests = t.done.reduce((n, d) => n + d, 0);
  return requests === 0 ? 0 : t.area.reduce((n, a) => n + a, 0) / requests / 1000;
}
