import type { NormaliseOptions } from '../../pipelines/pipeline.js';
import type { MonitorType } from '../storage/monitor-records.js';
import { MONITOR_TYPE_SPECS } from './monitor-types.js';

/** Invalid targets a reply shows one by one; the rest are counted by code. */
export const INVALID_EXAMPLES = 20;
const SHOWN_CHARS = 200;

/** Targets that were not valid: every one counted by code, the first few shown. Never dropped silently. */
export interface InvalidTargets {
  count: number;
  byCode: Record<string, number>;
  /** `row`: 1-based position in the JSON array, or the CSV's data row. */
  examples: { row: number; value: string; code: string }[];
}

export class InvalidTally implements InvalidTargets {
  count = 0;
  byCode: Record<string, number> = {};
  examples: { row: number; value: string; code: string }[] = [];

  add(row: number, value: string, code: string): void {
    this.count++;
    this.byCode[code] = (this.byCode[code] ?? 0) + 1;
    if (this.examples.length < INVALID_EXAMPLES) this.examples.push({ row, value: value.slice(0, SHOWN_CHARS), code });
  }
}

/** Targets given one by one (a JSON array), read as the type's bulk job reads its key cells. */
export interface ReadTargets {
  /** Normalised, each once, in the order first given. */
  targets: string[];
  /** Valid targets that repeated an earlier one (after normalisation). */
  duplicates: number;
  invalid: InvalidTargets;
}

export function readTargets(type: MonitorType, raw: readonly string[], options: NormaliseOptions = {}): ReadTargets {
  const { reading } = MONITOR_TYPE_SPECS[type];
  const seen = new Set<string>();
  const invalid = new InvalidTally();
  let duplicates = 0;
  raw.forEach((value, i) => {
    const read = reading.normalise(value, options);
    if (!read.ok) invalid.add(i + 1, value, read.code);
    else if (seen.has(read.key)) duplicates++;
    else seen.add(read.key);
  });
  return { targets: [...seen], duplicates, invalid };
}
