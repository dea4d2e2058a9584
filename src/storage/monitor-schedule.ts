import { FREQUENCIES, type Frequency } from './monitor-records.js';

const DAY_MS = 86_400_000;
const FIXED_MS: Partial<Record<Frequency, number>> = { [FREQUENCIES.weekly]: 7 * DAY_MS, [FREQUENCIES.biweekly]: 14 * DAY_MS };
const MONTHS: Partial<Record<Frequency, number>> = { [FREQUENCIES.monthly]: 1, [FREQUENCIES.quarterly]: 3 };

/**
 * The start of period `n` of a schedule: anchor + n periods. Months are counted from the anchor
 * each time, never from the last period, so a monitor anchored on the 31st runs on the last day of
 * a short month and on the 31st again after it (stepping month by month would drift to the 28th).
 */
export function periodStart(anchor: number, frequency: Frequency, n: number): number {
  const fixed = FIXED_MS[frequency];
  if (fixed !== undefined) return anchor + n * fixed;
  return addMonthsUtc(anchor, n * MONTHS[frequency]!);
}

/** The first period start strictly after `t`: where the schedule goes after a run at `t`. */
export function nextPeriodAfter(anchor: number, frequency: Frequency, t: number): number {
  return periodStart(anchor, frequency, firstPeriodAfter(anchor, frequency, t));
}

/**
 * The last period start at or before `t` (`t` not before the anchor): the period a run claimed at
 * `t` is for. After downtime that spans several periods, this is the latest of them, and it is the
 * only one that gets a run.
 */
export function periodAtOrBefore(anchor: number, frequency: Frequency, t: number): number {
  return periodStart(anchor, frequency, Math.max(0, firstPeriodAfter(anchor, frequency, t) - 1));
}

function firstPeriodAfter(anchor: number, frequency: Frequency, t: number): number {
  if (t < anchor) return 0;
  const fixed = FIXED_MS[frequency];
  if (fixed !== undefined) return Math.floor((t - anchor) / fixed) + 1;
  const step = MONTHS[frequency]!;
  const a = new Date(anchor);
  const b = new Date(t);
  // A first guess from the calendar months between the two, then corrected by at most a step or two.
  let n = Math.max(0, Math.floor(((b.getUTCFullYear() - a.getUTCFullYear()) * 12 + b.getUTCMonth() - a.getUTCMonth()) / step) - 1);
  while (periodStart(anchor, frequency, n) <= t) n++;
  while (n > 0 && periodStart(anchor, frequency, n - 1) > t) n--;
  return n;
}

/** `ms` moved by whole calendar months in UTC, the day kept or clamped to the month's last. */
function addMonthsUtc(ms: number, months: number): number {
  const d = new Date(ms);
  const target = new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + months, 1));
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  return Date.UTC(target.getUTCFullYear(), target.getUTCMonth(), Math.min(d.getUTCDate(), lastDay), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds());
}
