/**
 * A strict reader of the Prometheus text exposition format (0.0.4), with the lint rules that
 * `promtool check metrics` applies (client_golang's promlint), for tests on machines without
 * promtool. parse-prometheus-text-format, the npm parser the metrics tests also use, is lenient: it
 * takes any characters in a name and any text as a value. This one refuses what Prometheus's own
 * parser (expfmt's TextParser) refuses, and names what promlint flags.
 *
 * It is calibrated against the real promtool: test/api/metrics-exposition.test.ts feeds both the
 * same good and bad expositions and expects the same verdicts, whenever promtool is on the machine
 * (CI fetches it from Debian's `prometheus` package; see .ci/run).
 */

export interface Problem {
  /** 1-based line of the exposition, 0 for a problem of a whole family. */
  line: number;
  metric: string;
  text: string;
  /** `syntax`: promtool refuses to parse the exposition; `lint`: promtool parses it and names the problem. */
  kind: 'syntax' | 'lint';
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
/** Go's strconv.ParseFloat as expfmt uses it: decimal or exponent forms, hex floats aside, and the special values. */
const FLOAT = /^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|Inf|inf|NaN|nan)$/;
const TIMESTAMP = /^-?\d+$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

interface Family {
  name: string;
  type: string;
  help: string | undefined;
  samples: { line: number; name: string; labels: Record<string, string> }[];
}

/** The family a sample belongs to: a histogram's or summary's `_bucket`/`_sum`/`_count` go to their base name. */
function familyOf(name: string, families: Map<string, Family>): Family | undefined {
  const own = families.get(name);
  if (own) return own;
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const base = families.get(name.slice(0, -suffix.length));
    if (base && (base.type === 'histogram' || (base.type === 'summary' && suffix !== '_bucket'))) return base;
  }
  return undefined;
}

/** `name{labels} value [timestamp]`, every part checked; throws the reason for a line Prometheus would refuse. */
function parseSample(line: string): { name: string; labels: Record<string, string>; value: number } {
  let at = 0;
  const nameEnd = line.search(/[{ \t]/);
  const name = nameEnd < 0 ? line : line.slice(0, nameEnd);
  if (!METRIC_NAME.test(name)) throw new Error(`invalid metric name "${name}"`);
  at = name.length;
  const labels: Record<string, string> = {};
  if (line[at] === '{') {
    at++;
    for (;;) {
      while (line[at] === ' ' || line[at] === '\t') at++;
      if (line[at] === '}') break;
      const eq = line.indexOf('=', at);
      if (eq < 0) throw new Error('label without a value');
      const labelName = line.slice(at, eq).trim();
      if (!LABEL_NAME.test(labelName) || labelName.startsWith('__')) throw new Error(`invalid label name "${labelName}"`);
      if (Object.hasOwn(labels, labelName)) throw new Error(`duplicate label name "${labelName}"`);
      at = eq + 1;
      if (line[at] !== '"') throw new Error(`label value of "${labelName}" not quoted`);
      at++;
      let value = '';
      for (;;) {
        const c = line[at];
        if (c === undefined) throw new Error(`unterminated label value of "${labelName}"`);
        at++;
        if (c === '"') break;
        if (c !== '\\') {
          value += c;
          continue;
        }
        const escaped = line[at++];
        if (escaped === '\\' || escaped === '"') value += escaped;
        else if (escaped === 'n') value += '\n';
        else throw new Error(`invalid escape sequence "\\${escaped ?? ''}" in label value of "${labelName}"`);
      }
      labels[labelName] = value;
      while (line[at] === ' ' || line[at] === '\t') at++;
      if (line[at] === ',') at++;
      else if (line[at] !== '}') throw new Error(`unexpected "${line[at] ?? 'end of line'}" after a label value`);
    }
    at++;
  }
  const rest = line.slice(at).trim().split(/[ \t]+/);
  if (rest.length < 1 || rest[0] === '' || !FLOAT.test(rest[0]!)) throw new Error(`invalid value "${rest[0] ?? ''}"`);
  if (rest.length > 2) throw new Error('text after the timestamp');
  if (rest.length === 2 && !TIMESTAMP.test(rest[1]!)) throw new Error(`invalid timestamp "${rest[1]}"`);
  return { name, labels, value: Number(rest[0]!.replace(/^([+-]?)inf$/i, '$1Infinity')) };
}

/** promlint's problems of one family (client_golang prometheus/testutil/promlint), in words close to its own. */
function lintFamily(f: Family): string[] {
  const problems: string[] = [];
  const name = f.name;
  const lower = name.toLowerCase();
  const typed = f.type !== 'untyped';
  if (!f.help) problems.push('no help text');
  if (f.type === 'counter' && !name.endsWith('_total')) problems.push('counter metrics should have "_total" suffix');
  if (typed && f.type !== 'counter' && name.endsWith('_total')) problems.push('non-counter metrics should not have "_total" suffix');
  if (typed) {
    if (f.type !== 'histogram' && name.endsWith('_bucket')) problems.push('non-histogram metrics should not have "_bucket" suffix');
    for (const suffix of ['_count', '_sum']) {
      if (f.type !== 'histogram' && f.type !== 'summary' && name.endsWith(suffix)) problems.push(`non-histogram and non-summary metrics should not have "${suffix}" suffix`);
    }
    const labelNames = new Set(f.samples.flatMap((s) => Object.keys(s.labels)));
    if (f.type !== 'histogram' && labelNames.has('le')) problems.push('non-histogram metrics should not have "le" label');
    if (f.type !== 'summary' && labelNames.has('quantile')) problems.push('non-summary metrics should not have "quantile" label');
    for (const type of ['counter', 'gauge', 'histogram', 'summary']) {
      if (lower.includes(`_${type}_`) || lower.endsWith(`_${type}`)) problems.push(`metric name should not include type '${type}'`);
    }
  }
  if (name.includes(':')) problems.push("metric names should not contain ':'");
  if (/[a-z][A-Z]/.test(name)) problems.push("metric names should be written in 'snake_case' not 'camelCase'");
  for (const label of new Set(f.samples.flatMap((s) => Object.keys(s.labels)))) {
    if (/[a-z][A-Z]/.test(label)) problems.push("label names should be written in 'snake_case' not 'camelCase'");
  }
  for (const unit of ['s', 'ms', 'us', 'ns', 'sec', 'b', 'kb', 'mb', 'gb', 'tb', 'pb', 'm', 'h', 'd']) {
    if (lower.includes(`_${unit}_`) || lower.endsWith(`_${unit}`)) problems.push('metric names should not contain abbreviated units');
  }
  const base = ['amperes', 'bytes', 'candela', 'grams', 'joules', 'kelvin', 'meters', 'metres', 'moles', 'seconds', 'volts'];
  const prefixes = ['pico', 'nano', 'micro', 'milli', 'centi', 'deci', 'deca', 'hecto', 'kilo', 'kibi', 'mega', 'mebi', 'giga', 'gibi', 'tera', 'tebi', 'peta', 'pebi'];
  for (const part of lower.split('_')) {
    for (const unit of base) {
      const prefix = prefixes.find((p) => part === p + unit);
      if (prefix) problems.push(`use base unit "${unit}" instead of "${part}"`);
    }
    if (['minutes', 'hours', 'days', 'weeks'].includes(part)) problems.push(`use base unit "seconds" instead of "${part}"`);
  }
  return problems;
}

/** Histogram series: cumulative buckets, a `+Inf` bucket, and `_count` equal to it, per label set. */
function histogramProblems(f: Family, values: Map<number, number>): string[] {
  const problems: string[] = [];
  const groups = new Map<string, { le: number; value: number }[]>();
  const counts = new Map<string, number>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) problems.push(`${s.name} without an "le" label`);
      else groups.set(key, [...(groups.get(key) ?? []), { le: le === '+Inf' ? Infinity : Number(le), value: values.get(s.line)! }]);
    } else if (s.name === `${f.name}_count`) counts.set(key, values.get(s.line)!);
  }
  for (const [key, buckets] of groups) {
    const sorted = [...buckets].sort((a, b) => a.le - b.le);
    if (sorted.at(-1)?.le !== Infinity) problems.push(`histogram ${f.name}${key} has no le="+Inf" bucket`);
    for (let i = 1; i < sorted.length; i++) if (sorted[i]!.value < sorted[i - 1]!.value) problems.push(`histogram ${f.name}${key} buckets are not cumulative`);
    if (counts.has(key) && counts.get(key) !== sorted.at(-1)?.value) problems.push(`histogram ${f.name}${key}: _count differs from the +Inf bucket`);
  }
  return problems;
}

/**
 * Every problem of `text`, syntax first: a text with a syntax problem is one promtool would refuse
 * whole, so its lint is not reported (promtool stops at the first parse error too).
 */
export function checkExposition(text: string): Problem[] {
  const families = new Map<string, Family>();
  const values = new Map<number, number>();
  const seriesSeen = new Set<string>();
  const finished = new Set<string>();
  let current: Family | undefined;
  const syntax: Problem[] = [];
  const fail = (line: number, metric: string, text: string) => syntax.push({ line, metric, text, kind: 'syntax' });
  const familyFor = (name: string): Family => {
    if (!families.has(name)) families.set(name, { name, type: 'untyped', help: undefined, samples: [] });
    return families.get(name)!;
  };
  // A family's lines come together: one that comes back after another family's is refused.
  const enter = (f: Family, line: number) => {
    if (current === f) return;
    if (finished.has(f.name)) fail(line, f.name, 'the family appears twice, not in one group');
    if (current) finished.add(current.name);
    current = f;
  };
  const lines = text.split('\n');
  if (text !== '' && !text.endsWith('\n')) fail(lines.length, '', 'the exposition does not end with a newline');
  lines.forEach((raw, i) => {
    const lineNo = i + 1;
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '') return;
    if (line.startsWith('#')) {
      const m = /^#[ \t]+(HELP|TYPE)[ \t]+(\S+)(?:[ \t]+(.*))?$/.exec(line);
      if (!m) return; // a comment
      const [, keyword, name = '', rest = ''] = m;
      if (!METRIC_NAME.test(name)) return void fail(lineNo, name, `invalid metric name "${name}" in ${keyword}`);
      const f = familyFor(name);
      enter(f, lineNo);
      if (keyword === 'HELP') {
        if (f.help !== undefined) fail(lineNo, name, `second HELP line for metric name "${name}"`);
        f.help = rest;
      } else {
        if (f.type !== 'untyped' || f.samples.length > 0) fail(lineNo, name, `second TYPE line for metric name "${name}", or TYPE reported after samples`);
        if (!TYPES.has(rest.trim())) fail(lineNo, name, `unknown metric type "${rest.trim()}"`);
        f.type = rest.trim();
      }
      return;
    }
    try {
      const sample = parseSample(line);
      const f = familyOf(sample.name, families) ?? familyFor(sample.name);
      enter(f, lineNo);
      values.set(lineNo, sample.value);
      const series = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
      if (seriesSeen.has(series)) fail(lineNo, sample.name, `duplicate series ${series}`);
      seriesSeen.add(series);
      if (f.type === 'histogram' && sample.name === f.name) fail(lineNo, sample.name, 'a histogram sample without _bucket, _sum or _count');
      if (f.type === 'counter' && sample.value < 0) fail(lineNo, sample.name, 'a negative counter');
      f.samples.push({ line: lineNo, name: sample.name, labels: sample.labels });
    } catch (e) {
      fail(lineNo, line.split(/[{ \t]/)[0] ?? '', (e as Error).message);
    }
  });
  if (syntax.length > 0) return syntax;
  const problems: Problem[] = [];
  for (const f of families.values()) {
    for (const text of lintFamily(f)) problems.push({ line: 0, metric: f.name, text, kind: 'lint' });
    if (f.type === 'histogram') for (const text of histogramProblems(f, values)) problems.push({ line: 0, metric: f.name, text, kind: 'syntax' });
  }
  return problems;
}
