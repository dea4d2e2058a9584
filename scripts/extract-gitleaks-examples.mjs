#!/usr/bin/env node
// Makes test/fixtures/secrets/gitleaks-examples.json: each gitleaks rule's true positives (`tps`)
// and false positives (`fps`) as its rule generators (cmd/generate/config/rules/*.go, MIT) list
// them, for the rule corpus test. Only the data is taken: the Go source is read by a small
// evaluator that knows string literals, `+`, []string{...}, append(...) and gitleaks' helpers that
// build sample secrets (secrets.NewSecret(pattern) is filled from the pattern with a seeded random
// generator, so the fixture is the same on every run). An example it cannot evaluate is counted
// as skipped, never guessed.
//   node scripts/extract-gitleaks-examples.mjs /path/to/gitleaks.git
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import RandExp from 'randexp';
import { goRegexToJs } from './go-regex-to-js.mjs';

const gitDir = process.argv[2];
if (!gitDir) {
  console.error('usage: extract-gitleaks-examples.mjs GITLEAKS_GIT_DIR');
  process.exit(2);
}
const git = (...args) => execFileSync('git', [`--git-dir=${gitDir}`, ...args], { encoding: 'utf8', maxBuffer: 64 << 20 });
const commit = git('rev-parse', 'HEAD').trim();
const files = git('ls-tree', '--name-only', 'HEAD', 'cmd/generate/config/rules/').split('\n').filter((f) => f.endsWith('.go') && !f.endsWith('_test.go'));

let seed = 20261127;
function random() {
  seed = (seed * 1103515245 + 12345) & 0x7fffffff;
  return seed / 0x80000000;
}

// The sample shapes gitleaks' GenerateSampleSecrets fills in ({i} identifier, {I} upper case, {s} secret).
const SAMPLE_SHAPES = [
  '{i}Token="{s}"',
  '{i}Token = "{s}"',
  '{i}Token={s}',
  '{i}Token = {s}',
  '{\n    "{i}_token": "{s}"\n}',
  '{"config.ini": "{I}_TOKEN={s}\\nBACKUP_ENABLED=true"}',
  '<{i}Token>\n    {s}\n</{i}Token>',
  '{i}_token: {s}',
  "{i}_token: '{s}'",
  '{i}_token: "{s}"',
  'string {i}Token = "{s}";',
  'var {i}Token string = "{s}"',
  '{i}Token := "{s}"',
  '{i}Token := `{s}`',
  'String {i}Token = "{s}";',
  'var {i}Token = "{s}"',
  '${i}Token .= "{s}"',
  "{i}Token = '{s}'",
  '{i}Token = "{s}"',
  'System.setProperty("{I}_TOKEN", "{s}")',
  '  "{i}Token" => "{s}"',
  '{i}_TOKEN = "{s}"',
  '{i}_TOKEN := "{s}"',
  '{i}_TOKEN ::= "{s}"',
  '{i}_TOKEN :::= "{s}"',
  '{i}_TOKEN ?= "{s}"',
];
const fill = (shape, i, s) => shape.replaceAll('{i}', i).replaceAll('{I}', i.toUpperCase()).replaceAll('{s}', s);

const UNKNOWN = Symbol('unknown');
const SIZE_HELPERS = {
  'utils.Numeric': (n) => `[0-9]{${n}}`,
  'utils.Hex': (n) => `[a-f0-9]{${n}}`,
  'utils.AlphaNumeric': (n) => `[a-z0-9]{${n}}`,
  'utils.AlphaNumericExtendedShort': (n) => `[a-z0-9_-]{${n}}`,
  'utils.AlphaNumericExtended': (n) => `[a-z0-9=_\\-]{${n}}`,
  'utils.AlphaNumericExtendedLong': (n) => `[a-z0-9\\/=_\\+\\-]{${n}}`,
};

function newSecret(goPattern) {
  const js = goRegexToJs(goPattern);
  const r = new RandExp(new RegExp(js.source, js.flags));
  r.max = 16;
  r.randInt = (a, b) => a + Math.floor(random() * (1 + b - a));
  return r.gen();
}

function tokenize(src) {
  const tokens = [];
  const re = /\s+|\/\/[^\n]*|\/\*[\s\S]*?\*\/|"(?:[^"\\\n]|\\.)*"|`[^`]*`|'(?:[^'\\]|\\.)*'|[A-Za-z_][\w.]*|\d+(?:\.\d+)?|\.\.\.|:=|[^\s]/g;
  for (const m of src.matchAll(re)) {
    const t = m[0];
    if (/^\s/.test(t) || t.startsWith('//') || t.startsWith('/*')) continue;
    tokens.push({ t, at: m.index });
  }
  return tokens;
}

function goString(t) {
  if (t.startsWith('`')) return t.slice(1, -1);
  return JSON.parse(t.replace(/\\x([0-9a-fA-F]{2})/g, '\\u00$1').replace(/\\'/g, "'").replace(/\\a/g, '\\u0007').replace(/\\v/g, '\\u000b'));
}

class Parser {
  constructor(tokens, env) {
    this.tokens = tokens;
    this.i = 0;
    this.env = env;
    this.skipped = 0;
  }
  peek() {
    return this.tokens[this.i]?.t;
  }
  next() {
    return this.tokens[this.i++]?.t;
  }
  skipBalanced() {
    const open = this.next();
    const close = { '(': ')', '{': '}', '[': ']' }[open];
    let depth = 1;
    while (depth > 0 && this.i < this.tokens.length) {
      const t = this.next();
      if (t === open) depth++;
      else if (t === close) depth--;
    }
  }
  expr() {
    let left = this.primary();
    while (this.peek() === '+') {
      this.next();
      const right = this.primary();
      left = typeof left === 'string' && typeof right === 'string' ? left + right : UNKNOWN;
    }
    return left;
  }
  args() {
    this.next(); // (
    const out = [];
    while (this.peek() !== ')' && this.i < this.tokens.length) {
      const v = this.expr();
      let spread = false;
      if (this.peek() === '...') {
        this.next();
        spread = true;
      }
      out.push({ v, spread });
      if (this.peek() === ',') this.next();
    }
    this.next(); // )
    return out;
  }
  primary() {
    const t = this.peek();
    if (t === undefined) return UNKNOWN;
    if (t.startsWith('"') || t.startsWith('`')) {
      this.next();
      return goString(t);
    }
    if (/^\d/.test(t)) {
      this.next();
      return Number(t);
    }
    if (t === '[') {
      // []string{...}
      this.next();
      this.next();
      this.next();
      return this.list();
    }
    if (t === '(') {
      this.next();
      const v = this.expr();
      this.next();
      return v;
    }
    if (/^[A-Za-z_]/.test(t)) {
      this.next();
      if (this.peek() === '(') {
        const args = this.args();
        return this.call(t, args);
      }
      if (this.peek() === '{') {
        this.skipBalanced();
        return UNKNOWN;
      }
      return t in this.env ? this.env[t] : UNKNOWN;
    }
    if (t === '{' || t === '(') {
      this.skipBalanced();
      return UNKNOWN;
    }
    this.next();
    return UNKNOWN;
  }
  list() {
    if (this.peek() !== '{') return UNKNOWN;
    this.next();
    const out = [];
    while (this.peek() !== '}' && this.i < this.tokens.length) {
      const v = this.expr();
      if (typeof v === 'string') out.push(v);
      else this.skipped++;
      if (this.peek() === ',') this.next();
      else if (this.peek() !== '}') this.next();
    }
    this.next();
    return out;
  }
  call(name, args) {
    const v = args.map((a) => a.v);
    if (v.some((x) => x === UNKNOWN)) return UNKNOWN;
    try {
      if (name === 'secrets.NewSecret') return newSecret(v[0]);
      if (name in SIZE_HELPERS) return SIZE_HELPERS[name](v[0]);
      if (name === 'utils.Hex8_4_4_4_12') return '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
      if (name === 'utils.GenerateSampleSecret') return fill('{i}_api_token = "{s}"', v[0], v[1]);
      if (name === 'utils.GenerateSampleSecrets') return SAMPLE_SHAPES.map((s) => fill(s, v[0], v[1]));
      if (name === 'strings.Repeat') return v[0].repeat(v[1]);
      if (name === 'strings.ToUpper') return v[0].toUpperCase();
      if (name === 'strings.ToLower') return v[0].toLowerCase();
      if (name === 'fmt.Sprintf') {
        let k = 1;
        return v[0].replace(/%[sdv]/g, () => String(v[k++]));
      }
      if (name === 'append') {
        if (!Array.isArray(v[0])) return UNKNOWN;
        const out = [...v[0]];
        for (const a of args.slice(1)) {
          if (a.spread && Array.isArray(a.v)) out.push(...a.v);
          else if (typeof a.v === 'string') out.push(a.v);
          else return UNKNOWN;
        }
        return out;
      }
    } catch {
      return UNKNOWN;
    }
    return UNKNOWN;
  }
}

const rules = {};
let skippedTotal = 0;
for (const file of files) {
  const src = git('show', `HEAD:${file}`);
  for (const fn of src.split(/\nfunc /).slice(1)) {
    const id = /RuleID:\s*"([^"]+)"/.exec(fn)?.[1];
    if (!id) continue;
    const tokens = tokenize(fn);
    const env = {};
    let skipped = 0;
    for (let k = 0; k < tokens.length - 2; k++) {
      const isAssign = /^[A-Za-z_]\w*$/.test(tokens[k].t) && (tokens[k + 1].t === ':=' || tokens[k + 1].t === '=') && tokens[k - 1]?.t !== '.';
      if (!isAssign) continue;
      const parser = new Parser(tokens, env);
      parser.i = k + 2;
      const value = parser.expr();
      skipped += parser.skipped;
      if (value !== UNKNOWN) env[tokens[k].t] = value;
      k = parser.i - 1;
    }
    const positives = Array.isArray(env.tps) ? env.tps : [];
    const negatives = Array.isArray(env.fps) ? env.fps : [];
    skippedTotal += skipped;
    rules[id] = { positives, negatives, skipped };
  }
}
const target = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'test', 'fixtures', 'secrets', 'gitleaks-examples.json');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(
  target,
  `${JSON.stringify({ source: 'https://github.com/gitleaks/gitleaks/tree/master/cmd/generate/config/rules', licence: 'MIT, see src/lookups/secrets/rules/LICENSE-gitleaks', commit, rules }, null, 1)}\n`,
);
const ids = Object.keys(rules);
console.log(`${ids.length} rules; ${ids.filter((i) => rules[i].positives.length === 0).length} without positives; ${skippedTotal} examples skipped`);
