import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { installedPackages, lockfileFindings, npmAuditFindings, verdict, type Advisory } from '../../scripts/audit-lockfile.mjs';

const ADVISORIES: Advisory[] = [
  { id: 'GHSA-x3cc-x39p-42qx', package: 'fast-xml-parser', vulnerable: '<4.1.2', fixedIn: '4.1.2', severity: 'moderate' },
  { id: 'GHSA-wm7h-9275-46v2', package: 'dicer', vulnerable: '<=0.3.1', fixedIn: null, severity: 'high' },
];

/** A v3 lockfile holding the given `path -> entry` packages under the root project. */
function lockWith(packages: Record<string, { version: string; dev?: boolean; devOptional?: boolean; link?: boolean }>): unknown {
  return { lockfileVersion: 3, packages: { '': { name: 'fixture', version: '1.0.0' }, ...packages } };
}

describe('the offline lockfile audit', () => {
  it('reports a vulnerable runtime version and fails on it when it is not accepted', () => {
    const lock = lockWith({ 'node_modules/fast-xml-parser': { version: '3.21.1' } });

    const findings = lockfileFindings(lock, ADVISORIES);
    const result = verdict(findings, []);

    expect(findings).toMatchObject([{ name: 'fast-xml-parser', version: '3.21.1', id: 'GHSA-x3cc-x39p-42qx', runtime: true, fixedIn: '4.1.2' }]);
    expect(result.ok).toBe(false);
    expect(result.failing).toHaveLength(1);
  });

  it('does not report a fixed version, nor the first fixed one', () => {
    for (const version of ['4.1.2', '4.5.7', '5.0.0']) {
      expect(lockfileFindings(lockWith({ 'node_modules/fast-xml-parser': { version } }), ADVISORIES)).toEqual([]);
    }
  });

  it('finds nested copies by their package name, and an advisory without a fix on every version up to its bound', () => {
    const lock = lockWith({
      'node_modules/busboy': { version: '0.3.1' },
      'node_modules/busboy/node_modules/dicer': { version: '0.3.0' },
      'node_modules/other/node_modules/dicer': { version: '0.2.5' },
    });

    const findings = lockfileFindings(lock, ADVISORIES);

    expect(findings.map((f) => `${f.path}@${f.version}:${f.fixedIn}`)).toEqual([
      'node_modules/busboy/node_modules/dicer@0.3.0:null',
      'node_modules/other/node_modules/dicer@0.2.5:null',
    ]);
  });

  it('prints but does not fail on a dev-only package', () => {
    const lock = lockWith({
      'node_modules/fast-xml-parser': { version: '4.0.0', dev: true },
      'node_modules/dicer': { version: '0.3.0', devOptional: true },
    });

    const result = verdict(lockfileFindings(lock, ADVISORIES), []);

    expect(result.ok).toBe(true);
    expect(result.devOnly.map((f) => f.name)).toEqual(['fast-xml-parser', 'dicer']);
  });

  it('passes an accepted advisory with its reason, and names an acceptance that no longer matches anything', () => {
    const lock = lockWith({ 'node_modules/dicer': { version: '0.3.0' } });
    const accepted = [
      { id: 'GHSA-wm7h-9275-46v2', package: 'dicer', reason: 'unreachable behind the front' },
      { id: 'GHSA-x3cc-x39p-42qx', package: 'fast-xml-parser', reason: 'upgraded since' },
    ];

    const result = verdict(lockfileFindings(lock, ADVISORIES), accepted);

    expect(result.ok).toBe(true);
    expect(result.accepted).toMatchObject([{ name: 'dicer', reason: 'unreachable behind the front' }]);
    expect(result.stale).toMatchObject([{ id: 'GHSA-x3cc-x39p-42qx' }]);
  });

  it('an acceptance covers only its own package and advisory', () => {
    const lock = lockWith({ 'node_modules/fast-xml-parser': { version: '3.21.1' } });

    const result = verdict(lockfileFindings(lock, ADVISORIES), [{ id: 'GHSA-x3cc-x39p-42qx', package: 'dicer', reason: 'wrong package' }]);

    expect(result.ok).toBe(false);
  });

  it('skips linked workspaces and the root project', () => {
    const lock = lockWith({ 'node_modules/local': { version: '1.0.0', link: true } });

    expect(installedPackages(lock)).toEqual([]);
  });
});

describe('reading the registry audit', () => {
  it('takes advisories from npm audit --json and tells runtime from dev by the lockfile', () => {
    const lock = lockWith({ 'node_modules/dicer': { version: '0.3.0' }, 'node_modules/busboy': { version: '0.3.1' }, 'node_modules/vite': { version: '5.0.0', dev: true } });
    const report = {
      auditReportVersion: 2,
      vulnerabilities: {
        dicer: { name: 'dicer', nodes: ['node_modules/dicer'], via: [{ source: 1, name: 'dicer', title: 'Crash in HeaderParser in dicer', url: 'https://github.com/advisories/GHSA-wm7h-9275-46v2', severity: 'high', range: '<=0.3.1' }] },
        busboy: { name: 'busboy', nodes: ['node_modules/busboy'], via: ['dicer'] },
        vite: { name: 'vite', nodes: ['node_modules/vite'], via: [{ source: 2, name: 'vite', title: 't', url: 'https://github.com/advisories/GHSA-aaaa-bbbb-cccc', severity: 'moderate' }] },
      },
    };

    const findings = npmAuditFindings(report, lock);

    expect(findings.map((f) => [f.name, f.id, f.runtime])).toEqual([
      ['dicer', 'GHSA-wm7h-9275-46v2', true],
      ['vite', 'GHSA-aaaa-bbbb-cccc', false],
    ]);
  });
});

describe("this repository's lockfile", () => {
  it('has no advisory from the list on a runtime package that is neither fixed nor accepted', () => {
    const lock: unknown = JSON.parse(fs.readFileSync('package-lock.json', 'utf8'));
    const known = JSON.parse(fs.readFileSync('scripts/known-advisories.json', 'utf8')) as { advisories: Advisory[]; accepted: { id: string; package: string; reason: string }[] };

    const result = verdict(lockfileFindings(lock, known.advisories), known.accepted);

    expect(result.failing).toEqual([]);
    expect(result.stale).toEqual([]);
  });
});
