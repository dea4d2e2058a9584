#!/usr/bin/env node
// Dependency audit for .ci/run: the registry's audit when it answers, else package-lock.json read
// offline against scripts/known-advisories.json. Exits 1 when an advisory hits a package that
// ships at runtime and is not accepted with a reason; dev-only hits are printed, not failed.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import semver from 'semver';

const NPM_AUDIT_TIMEOUT_MS = 60_000;

/** Every installed copy of every package in a v2/v3 lockfile: `{ name, version, path, runtime }`. */
export function installedPackages(lock) {
  if (!lock.packages) throw new Error('package-lock.json has no "packages" map (lockfileVersion 2 or later needed)');
  const found = [];
  for (const [where, entry] of Object.entries(lock.packages)) {
    if (where === '' || entry.link || !entry.version) continue;
    const name = entry.name ?? where.slice(where.lastIndexOf('node_modules/') + 'node_modules/'.length);
    // `dev`/`devOptional`: npm leaves it out of a production install, so it never ships.
    // `local`: a `file:` directory of this repository (vendor/...), not the registry package of that name.
    found.push({ name, version: entry.version, path: where, runtime: !entry.dev && !entry.devOptional, local: !where.includes('node_modules/') });
  }
  return found;
}

/** The listed advisories that an installed version falls in. */
export function lockfileFindings(lock, advisories) {
  const findings = [];
  for (const installed of installedPackages(lock)) {
    // Registry advisories describe the published package; a local one shares only its name.
    if (installed.local) continue;
    for (const advisory of advisories) {
      if (advisory.package !== installed.name) continue;
      if (!semver.satisfies(installed.version, advisory.vulnerable, { includePrerelease: true })) continue;
      findings.push({ ...installed, id: advisory.id, severity: advisory.severity, fixedIn: advisory.fixedIn ?? null, summary: advisory.summary });
    }
  }
  return findings;
}

/** Findings from `npm audit --json` (npm 7+), placed in the lockfile to tell runtime from dev. */
export function npmAuditFindings(report, lock) {
  const byPath = new Map(installedPackages(lock).map((p) => [p.path, p]));
  const findings = [];
  for (const [name, vulnerability] of Object.entries(report.vulnerabilities ?? {})) {
    // `via` holds advisory objects for the package itself and names for what it depends on.
    for (const via of vulnerability.via ?? []) {
      if (typeof via !== 'object' || via === null) continue;
      const id = String(via.url ?? via.source).split('/').pop();
      for (const where of vulnerability.nodes ?? []) {
        const installed = byPath.get(where) ?? { name, version: '?', path: where, runtime: true };
        findings.push({ ...installed, id, severity: via.severity, fixedIn: null, summary: via.title });
      }
    }
  }
  return findings;
}

/** Splits findings into what fails the build, what is only reported, and acceptances that match nothing. */
export function verdict(findings, accepted) {
  const reasonFor = (f) => accepted.find((a) => a.id === f.id && a.package === f.name)?.reason;
  const failing = findings.filter((f) => f.runtime && reasonFor(f) === undefined);
  const devOnly = findings.filter((f) => !f.runtime && reasonFor(f) === undefined);
  const acceptedFindings = findings.filter((f) => reasonFor(f) !== undefined).map((f) => ({ ...f, reason: reasonFor(f) }));
  const stale = accepted.filter((a) => !findings.some((f) => f.id === a.id && f.name === a.package));
  return { failing, devOnly, accepted: acceptedFindings, stale, ok: failing.length === 0 };
}

function tryNpmAudit(cwd) {
  const run = spawnSync('npm', ['audit', '--json'], { cwd, encoding: 'utf8', timeout: NPM_AUDIT_TIMEOUT_MS });
  if (run.error) return { reachable: false, why: run.error.message };
  try {
    const report = JSON.parse(run.stdout);
    // npm exits 1 when it finds something; an answer from the registry always has `vulnerabilities`.
    if (report.vulnerabilities && !report.error) return { reachable: true, report };
    return { reachable: false, why: report.error?.summary || report.message || `npm audit exited ${run.status}` };
  } catch {
    return { reachable: false, why: `npm audit exited ${run.status} without a JSON report` };
  }
}

function describe(f) {
  const fix = f.fixedIn ? `fixed in ${f.fixedIn}` : 'no fixed version';
  return `${f.name}@${f.version} (${f.path}, ${f.runtime ? 'runtime' : 'dev only'}): ${f.id} ${f.severity ?? ''} ${f.summary ?? ''} [${fix}]`.replace(/ +/g, ' ');
}

function main() {
  const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
  const lock = JSON.parse(fs.readFileSync(path.join(root, 'package-lock.json'), 'utf8'));
  const known = JSON.parse(fs.readFileSync(path.join(root, 'scripts', 'known-advisories.json'), 'utf8'));
  const offlineOnly = process.argv.includes('--offline');

  const registry = offlineOnly ? { reachable: false, why: '--offline given' } : tryNpmAudit(root);
  let findings;
  if (registry.reachable) {
    console.log('audit: source: the registry (npm audit): every advisory it knows of today.');
    findings = npmAuditFindings(registry.report, lock);
  } else {
    console.log(`audit: the registry's audit did not answer (${registry.why}); reading package-lock.json offline.`);
    console.log(
      `audit: source: scripts/known-advisories.json, ${known.advisories.length} advisories, reviewed ${known.reviewed}. ` +
        'It sees only those: an advisory published since, or on a package not listed, goes unseen until someone adds it.',
    );
    findings = lockfileFindings(lock, known.advisories);
  }

  const local = installedPackages(lock).filter((p) => p.local);
  if (local.length) {
    console.log(`audit: local packages, reviewed with this repository, not matched against registry advisories: ${local.map((p) => `${p.name}@${p.version} (${p.path})`).join(', ')}`);
  }
  const result = verdict(findings, known.accepted);
  for (const f of result.failing) console.log(`audit: FAIL ${describe(f)}`);
  for (const f of result.devOnly) console.log(`audit: dev only, not failed: ${describe(f)}`);
  for (const f of result.accepted) console.log(`audit: accepted ${describe(f)} (reason in scripts/known-advisories.json)`);
  for (const a of result.stale) console.log(`audit: acceptance of ${a.id} on ${a.package} matches nothing installed; remove it`);
  console.log(
    result.ok
      ? `audit: passed: ${findings.length} finding(s), ${result.accepted.length} accepted, ${result.devOnly.length} dev only, none unaccepted at runtime`
      : `audit: failed: ${result.failing.length} advisory finding(s) on runtime packages are neither fixed nor accepted`,
  );
  return result.ok ? 0 : 1;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) process.exitCode = main();
