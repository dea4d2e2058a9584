import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearer, closeHarnesses, newAccount, openStoreHarness, runUntilDone, uploadCsv, json, type ApiHarness } from '../support/api-harness.js';
import { checkExposition, type Problem } from '../support/prometheus-exposition.js';
import { TEST_STORES } from '../support/test-engine.js';

/**
 * Issue 33, item 4: the /metrics exposition is one `promtool check metrics` accepts, on each store,
 * after real traffic (labelled counters, histograms with samples, a job's rows and charges).
 *
 * Two checks, so that a machine without promtool still checks something real:
 * - always: test/support/prometheus-exposition.ts, a strict reader of the text format with
 *   promtool's lint rules, whose verdicts on a corpus of good and bad expositions are fixed below;
 * - where promtool is (SLUICE_PROMTOOL, or `promtool` on PATH; CI fetches it from Debian's
 *   `prometheus` package, see .ci/run): promtool itself on the real exposition, and on the same
 *   corpus, where its exit status must match the verdict the strict reader gives.
 */

function findPromtool(): string | undefined {
  const named = process.env.SLUICE_PROMTOOL;
  if (named) {
    if (!fs.existsSync(named)) throw new Error(`SLUICE_PROMTOOL=${named} does not exist`);
    return named;
  }
  try {
    return execFileSync('sh', ['-c', 'command -v promtool'], { encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
}

const PROMTOOL = findPromtool();
if (!PROMTOOL) console.log('promtool not found (SLUICE_PROMTOOL, PATH): only the strict reader checks /metrics here');

/** promtool 2.x: exit 0 clean, 3 lint problems, 1 a text it cannot parse. */
function promtool(text: string): { status: number | null; output: string } {
  const run = spawnSync(PROMTOOL!, ['check', 'metrics'], { input: text, encoding: 'utf8', timeout: 30_000 });
  return { status: run.status, output: `${run.stdout}${run.stderr}`.trim() };
}

const VERDICT_STATUS = { clean: 0, lint: 3, syntax: 1 } as const;
type Verdict = keyof typeof VERDICT_STATUS;
const verdictOf = (problems: Problem[]): Verdict => (problems.length === 0 ? 'clean' : problems.some((p) => p.kind === 'syntax') ? 'syntax' : 'lint');

/**
 * Expositions with the verdict and the problem the strict reader must give. `promtool` is what
 * promtool 2.42 answers where it is laxer than the reader (it takes a family split in two, a
 * repeated series and a histogram whose buckets shrink); elsewhere it gives the reader's verdict.
 */
const CORPUS: { name: string; text: string; verdict: Verdict; problem?: string; promtool?: Verdict }[] = [
  { name: 'a counter, a gauge, a histogram', verdict: 'clean', text: '# HELP a_total A.\n# TYPE a_total counter\na_total{x="1"} 2\n# HELP g G.\n# TYPE g gauge\ng -1.5e3\n# HELP h_seconds H.\n# TYPE h_seconds histogram\nh_seconds_bucket{le="0.1"} 1\nh_seconds_bucket{le="+Inf"} 2\nh_seconds_sum 0.3\nh_seconds_count 2\n' },
  { name: 'escapes and special values', verdict: 'clean', text: '# HELP g G with \\\\ and \\n.\n# TYPE g gauge\ng{path="C:\\\\x",q="say \\"hi\\"\\n"} NaN\ng{path="y"} +Inf 1700000000000\n' },
  { name: 'a counter without _total', verdict: 'lint', problem: 'counter metrics should have "_total" suffix', text: '# HELP a A.\n# TYPE a counter\na 1\n' },
  { name: 'a gauge named _total', verdict: 'lint', problem: 'non-counter metrics should not have "_total" suffix', text: '# HELP a_total A.\n# TYPE a_total gauge\na_total 1\n' },
  { name: 'no HELP', verdict: 'lint', problem: 'no help text', text: '# TYPE a gauge\na 1\n' },
  { name: 'an abbreviated unit', verdict: 'lint', problem: 'metric names should not contain abbreviated units', text: '# HELP a_ms A.\n# TYPE a_ms gauge\na_ms 1\n' },
  { name: 'a prefixed unit', verdict: 'lint', problem: 'use base unit "seconds" instead of "milliseconds"', text: '# HELP a_milliseconds A.\n# TYPE a_milliseconds gauge\na_milliseconds 1\n' },
  { name: 'camelCase', verdict: 'lint', problem: "metric names should be written in 'snake_case' not 'camelCase'", text: '# HELP fooBar A.\n# TYPE fooBar gauge\nfooBar 1\n' },
  { name: 'the type in the name', verdict: 'lint', problem: "metric name should not include type 'gauge'", text: '# HELP a_gauge A.\n# TYPE a_gauge gauge\na_gauge 1\n' },
  { name: 'a gauge with an le label', verdict: 'lint', problem: 'non-histogram metrics should not have "le" label', text: '# HELP a A.\n# TYPE a gauge\na{le="1"} 1\n' },
  { name: 'a name with a dash', verdict: 'syntax', problem: 'invalid metric name "a-b"', text: 'a-b 1\n' },
  { name: 'a value that is no number', verdict: 'syntax', problem: 'invalid value "1x"', text: '# HELP a A.\n# TYPE a gauge\na 1x\n' },
  { name: 'an unknown escape', verdict: 'syntax', problem: 'invalid escape sequence "\\q"', text: '# HELP a A.\n# TYPE a gauge\na{x="\\q"} 1\n' },
  { name: 'a second HELP', verdict: 'syntax', problem: 'second HELP line', text: '# HELP a A.\n# HELP a B.\n# TYPE a gauge\na 1\n' },
  { name: 'TYPE after samples', verdict: 'syntax', problem: 'TYPE reported after samples', text: '# HELP a A.\na 1\n# TYPE a gauge\n' },
  { name: 'a repeated label name', verdict: 'syntax', problem: 'duplicate label name "x"', text: '# HELP a A.\n# TYPE a gauge\na{x="1",x="2"} 1\n' },
  { name: 'no final newline', verdict: 'syntax', problem: 'does not end with a newline', text: '# HELP a A.\n# TYPE a gauge\na 1' },
  { name: 'a family split in two', verdict: 'syntax', problem: 'not in one group', promtool: 'clean', text: '# HELP a A.\n# TYPE a gauge\na{x="1"} 1\n# HELP b B.\n# TYPE b gauge\nb 1\na{x="2"} 2\n' },
  { name: 'a repeated series', verdict: 'syntax', problem: 'duplicate series', promtool: 'clean', text: '# HELP a A.\n# TYPE a gauge\na 1\na 2\n' },
  { name: 'buckets that shrink', verdict: 'syntax', problem: 'not cumulative', promtool: 'clean', text: '# HELP h H.\n# TYPE h histogram\nh_bucket{le="1"} 3\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 2\n' },
];

describe('the strict reader of the exposition format', () => {
  it.each(CORPUS)('$name: $verdict', ({ text, verdict, problem }) => {
    const problems = checkExposition(text);
    expect(verdictOf(problems), JSON.stringify(problems)).toBe(verdict);
    if (problem) expect(problems.map((p) => p.text).join('\n')).toContain(problem);
  });

  it.skipIf(!PROMTOOL).each(CORPUS)('agrees with promtool on $name', ({ text, verdict, promtool: laxer }) => {
    const answer = promtool(text);
    expect(answer.status, answer.output).toBe(VERDICT_STATUS[laxer ?? verdict]);
  });
});

describe.each(TEST_STORES)('GET /metrics on %s after real traffic', (kind) => {
  let text: string;
  let h: ApiHarness;

  beforeAll(async () => {
    h = await openStoreHarness(kind, { SLUICE_WEBHOOK_ALLOW_PRIVATE: 'true' });
    const { key } = await newAccount(h, { credits: 100 });
    await h.app.inject({ method: 'GET', url: '/api/account', headers: bearer(key) });
    await h.app.inject({ method: 'GET', url: '/api/jobs/job_nope', headers: bearer(key) });
    await h.app.inject({ method: 'GET', url: '/no/such/path' });
    await h.app.inject({ method: 'POST', url: '/api/webhooks', headers: bearer(key), payload: { url: 'http://127.0.0.1:9/never-sent', events: ['bulk.completed'] } });
    const id = json(await uploadCsv(h, key, 'email\nanna.schmidt@example.com\njohn.smith@example.org\nnot-an-address\n')).id;
    await runUntilDone(h, [id]);
    const response = await h.app.inject({ method: 'GET', url: '/metrics' });
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    text = response.body;
  }, 60_000);

  afterAll(closeHarnesses);

  it('holds the traffic it measured (so the checks below read a full exposition)', () => {
    const families = new Map(parsePrometheusTextFormat(text).map((f) => [f.name, f]));
    expect(families.get('sluice_http_requests_total')?.metrics.length).toBeGreaterThanOrEqual(3);
    expect(text).toMatch(/^sluice_http_request_duration_seconds_bucket\{.*le="\+Inf".*\} [1-9]/m);
    expect(families.size).toBeGreaterThan(30);
  });

  it('the strict reader finds no problem', () => {
    expect(checkExposition(text)).toEqual([]);
  });

  it.skipIf(!PROMTOOL)('promtool check metrics finds no problem', () => {
    expect(promtool(text)).toEqual({ status: 0, output: '' });
  });
});
