import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ACCOUNTS_USAGE } from '../../src/cli/accounts-command.js';
import { DEMO_USAGE } from '../../src/main/demo.js';
import { IMPORT_USAGE_LINES } from '../../src/cli/import-command.js';
import { JOBS_USAGE } from '../../src/cli/jobs-command.js';
import { KEYS_USAGE } from '../../src/cli/keys-command.js';
import { LISTS_USAGE } from '../../src/cli/lists-command.js';
import { MONITORS_USAGE } from '../../src/cli/monitors-command.js';
import { RUN_USAGE } from '../../src/cli/run-command.js';
import { SERVE_USAGE } from '../../src/main/serve.js';
import { WORKER_USAGE } from '../../src/cli/worker-command.js';
import { SETTINGS } from '../../src/config/load-config.js';

const ROOT = path.resolve(import.meta.dirname, '../..');
const read = (file: string) => fs.readFileSync(path.join(ROOT, file), 'utf8');
/** The front door: what Sluice is, the two commands, testing, and the map of docs/. */
const README = read('README.md');
/** The one settings table; other pages link to it rather than repeat rows. */
const SETTINGS_PAGE = read('docs/reference/settings.md');
const CLI_PAGE = read('docs/reference/cli.md');
/** Every page a reader may meet: the README and everything under docs/. */
const ALL_DOCS = ['README.md', ...markdownUnder('docs')].map((file) => ({ file, text: read(file) }));

function markdownUnder(dir: string): string[] {
  return fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const relative = `${dir}/${entry.name}`;
    if (entry.isDirectory()) return markdownUnder(relative);
    return entry.name.endsWith('.md') ? [relative] : [];
  });
}
/**
 * The variables that steer a test run (an outside PostgreSQL, or none), read by the suite's global
 * setup rather than by loadConfig: taken from that file, so the README cannot name one it dropped.
 */
const TEST_RUN_VARIABLES = [
  ...new Set(
    ['../support/postgres-global-setup.ts', '../ui/dashboard.test.ts', '../api/metrics-exposition.test.ts', '../support/chromium.ts'].flatMap((file) =>
      [...fs.readFileSync(path.resolve(import.meta.dirname, file), 'utf8').matchAll(/process\.env\.(SLUICE_[A-Z0-9_]+)/g)].map((m) => m[1]!),
    ),
  ),
];
const USAGE_LINES = [SERVE_USAGE, RUN_USAGE, WORKER_USAGE, ...JOBS_USAGE, ...ACCOUNTS_USAGE, ...KEYS_USAGE, ...MONITORS_USAGE, ...LISTS_USAGE, ...IMPORT_USAGE_LINES, DEMO_USAGE];

/** The settings table's row for one variable: the line that starts with its name in a cell. */
function settingsRow(name: string): string | undefined {
  return SETTINGS_PAGE.split('\n').find((line) => line.startsWith(`| \`${name}\` |`));
}

/** How the table writes a default: the value in backticks, or `unset` for no default. */
function documentedDefault(fallback: unknown): string {
  return fallback === undefined ? '| unset |' : `| \`${String(fallback)}\` |`;
}

describe('the settings table (docs/reference/settings.md)', () => {
  const settings = Object.values(SETTINGS);

  it.each(settings.map((s) => [s.name, s.fallback] as const))('documents %s with its default %j', (name, fallback) => {
    const row = settingsRow(name);
    expect(row, `no table row for ${name}`).toBeDefined();
    expect(row).toContain(documentedDefault(fallback));
  });

  it('has one home: no other page has a settings table (a row added elsewhere belongs in this one)', () => {
    const header = '| variable | default | meaning |';
    expect(SETTINGS_PAGE.split('\n')).toContain(header);
    const elsewhere = ALL_DOCS.filter(({ file, text }) => file !== 'docs/reference/settings.md' && text.split('\n').includes(header));
    expect(elsewhere.map(({ file }) => file)).toEqual([]);
  });

  it.each(ALL_DOCS.map(({ file, text }) => [file, text]))('%s names no SLUICE_* variable that loadConfig or the test run does not know', (_file, text) => {
    const known = new Set([...settings.map((s) => s.name), ...TEST_RUN_VARIABLES]);
    const mentioned = new Set(text.match(/\bSLUICE_[A-Z0-9_]+\b/g) ?? []);
    expect([...mentioned].filter((name) => !known.has(name))).toEqual([]);
  });
});

describe('README.md on running the tests', () => {
  it('finds the variables the test run reads', () => {
    expect(TEST_RUN_VARIABLES.length).toBeGreaterThan(0);
  });

  it.each(TEST_RUN_VARIABLES.map((name) => [name]))('explains %s', (name) => {
    expect(README).toMatch(new RegExp(`\\b${name}=`));
  });
});

describe('the command reference (docs/reference/cli.md)', () => {
  it.each(USAGE_LINES.map((line) => [line]))('quotes the usage line %j verbatim', (line) => {
    expect(CLI_PAGE.split('\n')).toContain(line);
  });

  const commands = [...new Set(USAGE_LINES.map((line) => line.split(' ').slice(0, 2).join(' ')))];
  it.each(commands.map((command) => [command]))('has a section or table entry for `%s`', (command) => {
    expect(CLI_PAGE).toMatch(new RegExp(`\`${command}[ \`]`));
  });

  // `sluice accounts suspend ID | reinstate ID` names two subcommands; the README may write the second alone.
  const subcommands = USAGE_LINES.flatMap((line) => {
    const words = line.split(' ');
    const names = words.filter((word, i) => /^[a-z][a-z-]*$/.test(word) && (i === 2 || words[i - 1] === '|'));
    return names.map((name, i) => (i === 0 ? `${words[0]} ${words[1]} ${name}` : name));
  });
  it.each(subcommands.map((name) => [name]))('describes `%s`', (subcommand) => {
    expect(CLI_PAGE).toMatch(new RegExp(`\`${subcommand}[ \`]`));
  });
});

describe('README.md as the front door', () => {
  it('stays under 250 lines', () => {
    expect(README.split('\n').length).toBeLessThan(250);
  });

  it.each([['npm run test:unit'], ['npm test'], ['.ci/run']])('its testing section says how long `%s` takes', (command) => {
    const testing = README.slice(README.indexOf('\n## Testing'), README.indexOf('\n## ', README.indexOf('\n## Testing') + 1));
    const timing = testing.split('\n').find((line) => line.startsWith('| `') && line.includes(`\`${command}\``));
    expect(timing, `no row for ${command} in the timing table`).toBeDefined();
  });

  it.each(markdownUnder('docs').map((file) => [file]))('links to %s from its map of the docs', (file) => {
    expect(README).toContain(`](${file})`);
  });
});

describe('README.md entry points', () => {
  it.each([['npm install && npm run demo'], ['npm install && npm test']])('shows `%s` verbatim in a code block of its own', (command) => {
    expect(README).toContain(`\n\`\`\`sh\n${command}\n\`\`\`\n`);
  });
});
