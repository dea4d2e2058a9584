#!/usr/bin/env node
// Makes src/lookups/secrets/rules/gitleaks.json from gitleaks' config/gitleaks.toml (MIT; its
// LICENSE sits beside the output as LICENSE-gitleaks). Run once per gitleaks release:
//   git --git-dir=<gitleaks>.git show HEAD:config/gitleaks.toml > /tmp/gitleaks.toml
//   node scripts/import-gitleaks-rules.mjs /tmp/gitleaks.toml <commit> <commit date>
// The rules are data: every Go pattern is translated to JavaScript here, once, and a rule whose
// pattern cannot be translated is kept with `unsupported` saying why, so nothing drops silently.
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'smol-toml';
import { goRegexToJs } from './go-regex-to-js.mjs';
import { semiGenericAnchor } from './semi-generic-anchor.mjs';

const [tomlFile, commit, date] = process.argv.slice(2);
if (!tomlFile || !commit || !date) {
  console.error('usage: import-gitleaks-rules.mjs GITLEAKS_TOML COMMIT DATE');
  process.exit(2);
}
const config = parse(fs.readFileSync(tomlFile, 'utf8'));

function pattern(goSource) {
  const js = goRegexToJs(goSource);
  new RegExp(js.source, js.flags); // throws on anything JavaScript cannot compile
  return js;
}

function allowlist(a) {
  return {
    condition: (a.condition ?? 'OR').toUpperCase(),
    regexTarget: a.regexTarget ?? 'secret',
    regexes: (a.regexes ?? []).map(pattern),
    stopwords: (a.stopwords ?? []).map((w) => w.toLowerCase()),
    paths: (a.paths ?? []).map(pattern),
  };
}

const rules = config.rules.map((r) => {
  const rule = {
    id: r.id,
    description: r.description,
    regex: null,
    secretGroup: r.secretGroup ?? 0,
    entropy: r.entropy ?? 0,
    keywords: (r.keywords ?? []).map((k) => k.toLowerCase()),
    path: null,
    allowlists: [],
  };
  try {
    if (r.regex !== undefined) rule.regex = pattern(r.regex);
    const anchor = rule.regex && semiGenericAnchor(rule.regex.source);
    if (anchor) rule.anchor = anchor;
    if (r.path !== undefined) rule.path = pattern(r.path);
    rule.allowlists = (r.allowlists ?? []).map(allowlist);
    if (rule.regex === null) rule.unsupported = 'matches file names only (no content pattern); a text scan has no file';
  } catch (e) {
    rule.unsupported = `pattern not translatable to JavaScript: ${e.message}`;
  }
  return rule;
});

const out = {
  source: 'https://github.com/gitleaks/gitleaks/blob/master/config/gitleaks.toml',
  licence: 'MIT, Copyright (c) 2019 Zachary Rice; see LICENSE-gitleaks',
  commit,
  date,
  allowlist: allowlist(config.allowlist ?? {}),
  rules,
};
const target = path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'src', 'lookups', 'secrets', 'rules', 'gitleaks.json');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.writeFileSync(target, `${JSON.stringify(out, null, 1)}\n`);
const unsupported = rules.filter((r) => r.unsupported);
console.log(`${rules.length} rules, ${unsupported.length} unsupported`);
for (const r of unsupported) console.log(`  ${r.id}: ${r.unsupported}`);
