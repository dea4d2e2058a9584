/**
 * The scan thread's whole program, as a script (source text, like the billing hasher's, so that it
 * runs the same from dist/ and under vitest). It holds the compiled rules and answers one scan at
 * a time; the main thread bounds each scan's time and ends the thread if a pattern runs away, which
 * is the only way to stop a JavaScript regular expression that backtracks without end.
 *
 * Detection follows gitleaks: a rule runs only when one of its keywords is in the text (lower
 * case); the secret is the rule's secretGroup, else the first non-empty group, else the match; a
 * secret that the global or the rule's allowlists allow, or whose Shannon entropy is at or below the
 * rule's threshold, is dropped (generic rules also need a digit); a line holding `gitleaks:allow`
 * is skipped. secretlint, the alternate engine, is imported here from the path the main thread
 * resolved, so its patterns run on this thread too.
 */
export const SCAN_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { pathToFileURL } = require('node:url');

const compile = (p, extra) => new RegExp(p.source, p.flags + (extra || ''));
const compileList = (a) => ({
  condition: a.condition,
  regexTarget: a.regexTarget,
  regexes: a.regexes.map((p) => compile(p)),
  stopwords: a.stopwords,
  paths: a.paths.map((p) => compile(p)),
});
const globalAllow = compileList(workerData.allowlist);
const rules = workerData.rules.map((r) => ({
  id: r.id,
  keywords: r.keywords,
  entropy: r.entropy,
  secretGroup: r.secretGroup,
  regex: compile(r.regex, 'gd'),
  sticky: r.anchor ? compile(r.regex, 'yd') : null,
  anchor: r.anchor ? { re: new RegExp(r.anchor.source, r.regex.flags + 'g'), lead: r.anchor.lead } : null,
  path: r.path ? compile(r.path) : null,
  allowlists: r.allowlists.map(compileList),
}));

function shannon(text) {
  const counts = new Map();
  for (const c of text) counts.set(c, (counts.get(c) || 0) + 1);
  const n = [...text].length;
  let h = 0;
  for (const k of counts.values()) {
    const p = k / n;
    h -= p * Math.log2(p);
  }
  return h;
}

function lineStarts(text) {
  const starts = [0];
  for (let i = text.indexOf('\\n'); i !== -1; i = text.indexOf('\\n', i + 1)) starts.push(i + 1);
  return starts;
}
function lineOf(starts, offset) {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi + 1) >> 1;
    if (starts[mid] <= offset) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

function test(re, text) {
  re.lastIndex = 0;
  return re.test(text);
}

function allowed(list, secret, match, line, file) {
  const checks = [];
  if (list.regexes.length > 0) {
    const target = list.regexTarget === 'match' ? match : list.regexTarget === 'line' ? line : secret;
    checks.push(list.regexes.some((re) => test(re, target)));
  }
  if (list.stopwords.length > 0) {
    const lower = secret.toLowerCase();
    checks.push(list.stopwords.some((w) => lower.includes(w)));
  }
  if (list.paths.length > 0) checks.push(file !== null && list.paths.some((re) => test(re, file)));
  if (checks.length === 0) return false;
  return list.condition === 'AND' ? checks.every(Boolean) : checks.some(Boolean);
}

/** Every match of the rule, leftmost first, as a global exec loop would give them. */
function* matches(rule, content) {
  if (!rule.anchor) {
    const re = rule.regex;
    re.lastIndex = 0;
    let m;
    while ((m = re.exec(content)) !== null) {
      if (m[0].length === 0) {
        re.lastIndex++;
        continue;
      }
      yield m;
    }
    return;
  }
  // Every match holds an identifier no more than lead characters after its start: try the whole
  // pattern (sticky) only at those starts, in order, never before the end of the previous match.
  const ids = rule.anchor.re;
  const sticky = rule.sticky;
  let next = 0;
  ids.lastIndex = 0;
  let a;
  while ((a = ids.exec(content)) !== null) {
    const k = a.index;
    let s = Math.max(next, k - rule.anchor.lead);
    let found = null;
    for (; s <= k; s++) {
      sticky.lastIndex = s;
      const m = sticky.exec(content);
      if (m !== null && m[0].length > 0) {
        found = m;
        break;
      }
    }
    if (found) {
      next = s + found[0].length;
      yield found;
    } else {
      next = Math.max(next, k + 1);
    }
    ids.lastIndex = Math.max(k + 1, next);
  }
}

function gitleaks(content, file, ruleIds, deadline) {
  const out = [];
  if (file !== null && globalAllow.paths.some((re) => test(re, file))) return out;
  const lower = content.toLowerCase();
  const starts = lineStarts(content);
  for (const rule of rules) {
    if (ruleIds && !ruleIds.has(rule.id)) continue;
    if (Date.now() > deadline) throw Object.assign(new Error('scan time budget exceeded'), { code: 'budget' });
    if (rule.keywords.length > 0 && !rule.keywords.some((k) => lower.includes(k))) continue;
    if (rule.path && (file === null || !test(rule.path, file))) continue;
    for (const m of matches(rule, content)) {
      let secret = m[0];
      let at = m.indices[0];
      if (m.length > 1) {
        if (rule.secretGroup > 0) {
          secret = m[rule.secretGroup] || '';
          at = m.indices[rule.secretGroup] || at;
        } else {
          for (let g = 1; g < m.length; g++) {
            if (m[g]) {
              secret = m[g];
              at = m.indices[g];
              break;
            }
          }
        }
      }
      if (!secret) continue;
      const first = lineOf(starts, at[0]);
      const last = lineOf(starts, Math.max(at[0], at[1] - 1));
      const lineEnd = starts[last + 1] === undefined ? content.length : starts[last + 1] - 1;
      const line = content.slice(starts[first], lineEnd);
      if (line.includes('gitleaks:allow')) continue;
      if (globalAllow.regexes.some((r) => test(r, secret))) continue;
      if (globalAllow.stopwords.some((w) => secret.toLowerCase().includes(w))) continue;
      if (rule.allowlists.some((a) => allowed(a, secret, m[0], line, file))) continue;
      const entropy = shannon(secret);
      if (rule.entropy > 0) {
        if (entropy <= rule.entropy) continue;
        if (rule.id.startsWith('generic') && !/[0-9]/.test(secret)) continue;
      }
      out.push({
        engine: 'gitleaks',
        ruleId: rule.id,
        secret,
        start: at[0],
        end: at[1],
        startLine: first + 1,
        endLine: last + 1,
        column: at[0] - starts[first] + 1,
        entropy,
      });
    }
  }
  return out;
}

let secretlint;
async function loadSecretlint() {
  if (!secretlint) {
    const core = await import(pathToFileURL(workerData.secretlint.core).href);
    const preset = await import(pathToFileURL(workerData.secretlint.preset).href);
    secretlint = { lintSource: core.lintSource, preset: preset.creator || preset.default.creator || preset.default };
  }
  return secretlint;
}

async function runSecretlint(content, file) {
  const { lintSource, preset } = await loadSecretlint();
  const result = await lintSource({
    source: { content, filePath: file || 'content.txt', ext: '', contentType: 'text' },
    options: { config: { rules: [{ id: '@secretlint/secretlint-rule-preset-recommend', rule: preset }] }, maskSecrets: false },
  });
  const starts = lineStarts(content);
  return result.messages.map((msg) => {
    const [s, e] = msg.range;
    const secret = content.slice(s, e);
    const first = lineOf(starts, s);
    return {
      engine: 'secretlint',
      ruleId: msg.ruleId,
      messageId: msg.messageId,
      secret,
      start: s,
      end: e,
      startLine: first + 1,
      endLine: lineOf(starts, Math.max(s, e - 1)) + 1,
      column: s - starts[first] + 1,
      entropy: shannon(secret),
    };
  });
}

parentPort.on('message', async ({ id, content, file, ruleIds, engines, budgetMs }) => {
  try {
    const deadline = Date.now() + budgetMs;
    const ids = ruleIds ? new Set(ruleIds) : null;
    const found = [];
    if (engines.includes('gitleaks')) found.push(...gitleaks(content, file, ids, deadline));
    if (engines.includes('secretlint')) found.push(...(await runSecretlint(content, file)));
    parentPort.postMessage({ id, ok: true, found });
  } catch (e) {
    parentPort.postMessage({ id, ok: false, code: e && e.code === 'budget' ? 'budget' : 'error', message: String(e && e.message) });
  }
});
`;
