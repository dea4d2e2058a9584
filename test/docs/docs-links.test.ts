import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

/**
 * The docs cite the code: relative links, paths in backticks, and names such as `JobService.cancel`
 * or `openEngine`. A rename that forgets the docs leaves a reader hunting for what no longer exists,
 * so every citation is checked against the tree: links and their #anchors, paths on disk, names
 * declared in the source (and a member inside its owner's file).
 */
const ROOT = path.resolve(import.meta.dirname, '../..');
const SKIP_DIRS = new Set(['node_modules', 'dist', '.git', '.sluice', 'sluice-results', 'test-results']);

function walk(dir: string, keep: (name: string) => boolean): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = dir === '.' ? entry.name : `${dir}/${entry.name}`;
    if (entry.isDirectory()) return SKIP_DIRS.has(entry.name) ? [] : walk(relative, keep);
    return keep(entry.name) ? [relative] : [];
  });
}

/** The pages that describe the code as it is now. */
const PAGES = ['README.md', 'ARCHITECTURE.md', 'RELIABILITY.md', ...walk('docs', (n) => n.endsWith('.md'))];
/**
 * Records of past runs (figures, profiles): their links and paths must still lead somewhere, but a
 * function named in an old profile is history, not a citation of today's code.
 */
const RECORDS = walk('bench', (n) => n.endsWith('.md'));
/** Names of other systems' code that the pages cite on purpose, with whose they are. */
const FOREIGN_NAMES: Record<string, string> = {
  allowScripts: "npm's package.json field",
  NotImplemented: 'an S3 error code',
  sendMessage: "the Telegram Bot API's method",
  getJobs: "graphile-worker's job claim",
  fetchNextJob: "pg-boss's job claim",
};
const FILE_EXTENSIONS = /^(md|ts|js|mjs|json|sql|csv|yml|yaml|txt|png)$/;
const SOURCES = ['src', 'pipelines', 'bench', 'test', 'scripts', 'fixtures']
  .flatMap((dir) => walk(dir, (n) => /\.(ts|mts|mjs|js)$/.test(n)))
  .map((file) => ({ file, text: fs.readFileSync(path.join(ROOT, file), 'utf8') }));

/** The page without its fenced code blocks: a shell session or a JSON body is not a citation. */
function prose(text: string): string {
  return text.replace(/^```[^\n]*\n[\s\S]*?^```$/gm, '');
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\- _]/gu, '')
    .replace(/ /g, '-');
}

/** The anchors of a page's headings; a repeated heading gets -1, -2 as on GitHub. */
function headingAnchors(text: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  for (const match of prose(text).matchAll(/^#{1,6} (.+)$/gm)) {
    const base = slug(match[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

const anchorCache = new Map<string, Set<string>>();
function anchorsOf(file: string): Set<string> {
  let anchors = anchorCache.get(file);
  if (!anchors) anchorCache.set(file, (anchors = headingAnchors(fs.readFileSync(path.join(ROOT, file), 'utf8'))));
  return anchors;
}

const read = (page: string) => fs.readFileSync(path.join(ROOT, page), 'utf8');

function brokenLinks(page: string, source = read(page)): string[] {
  const text = prose(source);
  const broken: string[] = [];
  for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
    const target = match[1]!;
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
    const [file, anchor] = target.split('#') as [string, string | undefined];
    const resolved = file === '' ? page : path.relative(ROOT, path.resolve(ROOT, path.dirname(page), decodeURI(file)));
    if (resolved === page) {
      if (anchor !== undefined && !headingAnchors(text).has(anchor)) broken.push(`${target} (no heading #${anchor} here)`);
      continue;
    }
    if (!fs.existsSync(path.join(ROOT, resolved))) {
      broken.push(`${target} (no ${resolved})`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(resolved).has(anchor)) broken.push(`${target} (no heading #${anchor} in ${resolved})`);
  }
  return broken;
}

/** Code spans of the page's prose. */
function spans(source: string): string[] {
  const text = prose(source);
  return [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!.trim());
}

const PATH_ROOTS = /^(src|test|bench|pipelines|fixtures|scripts|docs|vendor|\.ci)\//;

/** Paths into the tree; placeholders (`<job id>`, globs) and build output are not checked. */
function missingPaths(source: string): string[] {
  return spans(source)
    .filter((span) => PATH_ROOTS.test(span) && !/[\s<>*{}$]/.test(span))
    .map((span) => span.replace(/[:#].*$/, '').replace(/[.,;]$/, ''))
    .filter((cited) => !fs.existsSync(path.join(ROOT, cited)));
}

const declared = new Map<string, string[]>();
for (const { file, text } of SOURCES) {
  for (const match of text.matchAll(/\b(?:class|interface|type|enum|function\*?|const|let)\s+([A-Za-z_$][\w$]*)/g)) {
    const list = declared.get(match[1]!) ?? [];
    list.push(file);
    declared.set(match[1]!, list);
  }
}

/** Whether `member` is declared in one of the files that declare `owner`: a method, property or field. */
function hasMember(owner: string, member: string): boolean {
  const files = declared.get(owner) ?? [];
  const pattern = new RegExp(`(^|[\\s{;,(])(?:readonly\\s+|async\\s+|static\\s+|private\\s+|get\\s+)*${member}\\??\\s*[(:<=]`, 'm');
  return files.some((file) => pattern.test(SOURCES.find((s) => s.file === file)!.text));
}

/**
 * Names of code: `Owner.member` with a capitalised owner, a PascalCase name with a second capital
 * (`JobService`, `AppError`: words such as `Bearer` are not taken for code), or a camelCase name
 * (`openEngine`, `processBatch()`).
 */
function missingNames(source: string): string[] {
  const missing: string[] = [];
  for (const span of spans(source)) {
    const name = span.replace(/\(\)$/, '');
    if (FOREIGN_NAMES[name] !== undefined) continue;
    const member = /^([A-Z][A-Za-z0-9]*)\.([a-z][A-Za-z0-9]*)$/.exec(name);
    if (member && !FILE_EXTENSIONS.test(member[2]!)) {
      const [, owner, field] = member;
      if (!declared.has(owner!)) missing.push(`${name} (no ${owner})`);
      else if (!hasMember(owner!, field!)) missing.push(`${name} (${owner} has no ${field})`);
      continue;
    }
    if (member) continue; // a file name such as DESIGN.md
    const pascal = /^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+$/.test(name);
    const camel = /^[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+$/.test(name);
    if ((pascal || camel) && !declared.has(name) && !SOURCES.some(({ text }) => new RegExp(`\\b${name}\\s*[(:=]`).test(text))) missing.push(name);
  }
  return missing;
}

describe('what the docs cite exists', () => {
  it('finds the pages and the source it checks', () => {
    expect(PAGES).toContain('docs/reference/settings.md');
    expect(declared.has('JobService')).toBe(true);
  });

  it.each([...PAGES, ...RECORDS].map((page) => [page]))('%s: every relative link leads to a file, and every #anchor to a heading', (page) => {
    expect(brokenLinks(page)).toEqual([]);
  });

  it.each([...PAGES, ...RECORDS].map((page) => [page]))('%s: every path it cites is in the tree', (page) => {
    expect(missingPaths(read(page))).toEqual([]);
  });

  it.each(PAGES.map((page) => [page]))('%s: every name of code it cites is declared in the source', (page) => {
    expect(missingNames(read(page))).toEqual([]);
  });

  it('catches what it is for: a stale name, path, link and anchor', () => {
    const page = 'docs/probe.md';
    const text = '# Probe\n\n`JobStore.complete`, `src/jobs/job-states.ts`, `JobService.cancel`, `JobService.vanish`, [gone](none.md), [map](../README.md#testing), [here](#probe), [no](#nowhere), [far](../README.md#nowhere)\n';
    expect(missingNames(text)).toEqual(['JobStore.complete (no JobStore)', 'JobService.vanish (JobService has no vanish)']);
    expect(missingPaths(text)).toEqual(['src/jobs/job-states.ts']);
    expect(brokenLinks(page, text)).toEqual(['none.md (no docs/none.md)', '#nowhere (no heading #nowhere here)', '../README.md#nowhere (no heading #nowhere in README.md)']);
  });
});
