import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isIP } from 'node:net';
import { commitChanges, cloneBare } from '../lookups/secrets/git-history.js';
import { scanConfig, type ScanConfig, type ScanConfigInput } from '../lookups/secrets/scan-config.js';
import type { SecretScanner } from '../lookups/secrets/secret-scanner.js';
import { enginesOf, type ScanType } from '../lookups/secrets/secret-types.js';
import type { Clock } from '../shared/clock.js';
import { AppError, ERROR_CODES, isAppError } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import { chargeLedgerId } from '../storage/ledger-ids.js';
import { REPO_SCAN_STATUSES, type RepoScanLease, type RepoScanRecord, type RepoScansPort } from '../storage/repo-scan-records.js';
import type { BillingPort } from '../storage/store.js';
import { blockedReason, type AddressPolicy } from '../webhooks/address-policy.js';
import { requireRuleIds, rulesRequested, type ExposedKeysResult } from './exposed-keys-scan.js';

export const REPOSITORY_KIND = 'repository';
/** Spec 8: "Code-host leak scan: zero findings is free"; with findings, 1 credit, as the text scan. */
export const REPOSITORY_SCAN_PRICE = 1;

export interface RepoScanDeps {
  readonly scans: RepoScansPort;
  readonly scanner: SecretScanner;
  readonly billing: BillingPort;
  readonly clock: Clock;
  readonly log: Logger;
  readonly policy: AddressPolicy;
  readonly leaseMs: number;
  readonly clone: { readonly timeoutMs: number; readonly maxBytes: number };
  readonly validateByDefault: boolean;
}

export interface RepoScanRequest {
  url: string;
  type?: ScanType;
  config?: ScanConfigInput;
}

/** Checks the URL (https, or http where private addresses are allowed; public addresses only) and queues the scan. */
export async function startRepoScan(deps: RepoScanDeps, accountId: string, request: RepoScanRequest): Promise<RepoScanRecord> {
  const url = await checkRepositoryUrl(request.url, deps.policy);
  const config = scanConfig(request.config, deps.validateByDefault);
  requireRuleIds(config.rules);
  const id = `rscan_${randomUUID()}`;
  const now = deps.clock.now();
  // Spec 4.6 runs a repository's history through both engines unless the caller picks one.
  await deps.scans.create({ id, accountId, url: url.toString(), type: request.type ?? 2, config: JSON.stringify(config), now });
  return (await deps.scans.get(accountId, id))!;
}

function invalid(message: string): AppError {
  return new AppError(ERROR_CODES.invalidRepository, message, { statusCode: 422 });
}

export async function checkRepositoryUrl(raw: string, policy: AddressPolicy): Promise<URL> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw invalid('url is not a valid URL');
  }
  if (url.protocol !== 'https:' && !(policy.allowPrivate && url.protocol === 'http:')) throw invalid('url must use https');
  if (url.username !== '' || url.password !== '') throw invalid('url must not carry credentials: only public repositories are scanned');
  if (url.pathname.length < 2) throw invalid('url names no repository');
  await pinnedAddress(url, policy);
  return url;
}

/** The address git must connect to, checked against the policy: `host:port:address` for curl's resolve list. */
async function pinnedAddress(url: URL, policy: AddressPolicy): Promise<string | undefined> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  if (isIP(host) !== 0) {
    const reason = blockedReason(host);
    if (reason !== undefined && !policy.allowPrivate) throw new AppError(ERROR_CODES.blockedAddress, `repository host is not a public address (${reason})`, { statusCode: 422 });
    return undefined;
  }
  let addresses: Awaited<ReturnType<AddressPolicy['resolve']>>;
  try {
    addresses = await policy.resolve(host);
  } catch {
    throw invalid(`repository host ${host} does not resolve`);
  }
  const first = addresses[0];
  if (!first) throw invalid(`repository host ${host} does not resolve`);
  if (!policy.allowPrivate && addresses.some((a) => blockedReason(a.address) !== undefined)) {
    throw new AppError(ERROR_CODES.blockedAddress, `repository host ${host} does not resolve to a public address`, { statusCode: 422 });
  }
  return `${host}:${port}:${first.family === 6 ? `[${first.address}]` : first.address}`;
}

/**
 * Runs one claimed scan: clone, every commit's additions through the chosen engines, the verdicts,
 * the charge and the end, in that order. A crash anywhere before the end leaves the scan
 * processing with a lease that runs out; the next claim starts it over from the clone and reaches
 * the same findings. The charge has a ledger id of its own (the scan's id), so a scan charged
 * before a crash is never charged again.
 */
export async function runRepoScan(deps: RepoScanDeps, scan: RepoScanRecord, lease: RepoScanLease): Promise<void> {
  const log = deps.log.child({ scanId: scan.id });
  const config = JSON.parse(scan.config) as ScanConfig;
  const type = scan.type as ScanType;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-repo-'));
  const started = performance.now();
  let lastRenew = deps.clock.now();
  const keepLease = async (): Promise<void> => {
    const now = deps.clock.now();
    if (now - lastRenew < deps.leaseMs / 3) return;
    if (!(await deps.scans.renew(scan.id, lease, now, deps.leaseMs))) throw new AppError(ERROR_CODES.leaseLost, 'repository scan lease lost');
    lastRenew = now;
  };
  try {
    const url = new URL(scan.url);
    const pin = await pinnedAddress(url, deps.policy);
    await cloneBare(scan.url, path.join(dir, 'repo.git'), { ...deps.clone, allowHttp: deps.policy.allowPrivate, pin });
    const seen = new Set<string>();
    const found: Awaited<ReturnType<SecretScanner['findAll']>> = [];
    const meta = new Map<object, { commit: string; author: string; email: string; date: string }>();
    let commits = 0;
    let head: string | null = null;
    for await (const commit of commitChanges(path.join(dir, 'repo.git'))) {
      commits++;
      head = commit.sha;
      for (const file of commit.files) {
        if (file.added.length === 0) continue;
        const candidates = await deps.scanner.findAll(file.added.join('\n'), file.path, enginesOf(type), config.rules);
        for (const c of candidates) {
          // The first commit that added a secret to a file names the finding; later copies add nothing to rotate.
          const key = `${c.finding.fingerprint}\0${file.path}`;
          if (seen.has(key)) continue;
          seen.add(key);
          c.finding.start_line = file.lines[c.finding.start_line - 1] ?? c.finding.start_line;
          c.finding.end_line = file.lines[c.finding.end_line - 1] ?? c.finding.end_line;
          meta.set(c.finding, { commit: commit.sha, author: commit.author, email: commit.email, date: commit.date });
          found.push(c);
        }
      }
      await keepLease();
    }
    const { findings, counts } = await deps.scanner.judge(found, config, () => deps.clock.now());
    let credits = 0;
    let errorCode: string | null = null;
    if (counts.total > 0) {
      const charge = await chargeOnce(deps, scan);
      if (charge === 'insufficient') errorCode = ERROR_CODES.insufficientCredits;
      else credits = REPOSITORY_SCAN_PRICE;
    }
    const result: ExposedKeysResult = {
      scan_id: scan.id,
      repository_id: scan.url,
      kind: REPOSITORY_KIND,
      target: scan.url,
      type,
      commit_sha: head,
      depth: commits,
      config,
      summary: { ...counts, engines_run: enginesOf(type), rules_requested: rulesRequested(config.rules, type), deep_scan: true, duration_ms: Math.round(performance.now() - started) },
      // Findings the account could not pay for are not shown.
      findings: errorCode ? [] : findings.map((f) => ({ ...f, ...(meta.get(f) ?? { commit: null, author: null, email: null, date: null }) })),
      reused: false,
      charged: credits > 0,
      credits,
      status: errorCode ? REPO_SCAN_STATUSES.failed : REPO_SCAN_STATUSES.completed,
    };
    const ended = await deps.scans.finish(scan.id, lease, { status: result.status as 'completed' | 'failed', errorCode, result: JSON.stringify(result) }, deps.clock.now());
    log.info({ commits, findings: counts.total, credits, ended }, 'repository scan ended');
  } catch (e: unknown) {
    const code = isAppError(e) ? e.code : ERROR_CODES.internal;
    if (code === ERROR_CODES.leaseLost) return;
    // A clone that fails or overruns is the caller's repository, not a blip: the scan fails, free.
    log.warn({ code }, 'repository scan failed');
    await deps.scans.finish(scan.id, lease, { status: 'failed', errorCode: code, result: null }, deps.clock.now());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** 1 credit under a ledger id made from the scan's id: a second attempt finds it and charges nothing. */
async function chargeOnce(deps: RepoScanDeps, scan: RepoScanRecord): Promise<'charged' | 'insufficient'> {
  const callId = `repo-scan:${scan.id}`;
  const ledgerId = chargeLedgerId(scan.accountId, 'call', callId);
  if (scan.attempts > 1 && (await deps.billing.ledger(scan.accountId)).some((e) => e.id === ledgerId)) return 'charged';
  const committed = await deps.billing.commitLookup({
    accountId: scan.accountId,
    kind: REPOSITORY_KIND,
    charge: { type: 'flat', amount: REPOSITORY_SCAN_PRICE, callId },
    cache: [],
    now: deps.clock.now(),
  });
  return committed.ok ? 'charged' : 'insufficient';
}

const STOP_WAIT_MS = 2_000;

/** Claims and runs scans one at a time until stopped; returns the stop function. */
export function driveRepoScans(deps: RepoScanDeps, owner: string, pollMs: number): () => Promise<void> {
  let stopped = false;
  const loop = (async () => {
    while (!stopped) {
      let claimed: Awaited<ReturnType<RepoScansPort['claim']>>;
      try {
        claimed = await deps.scans.claim(owner, deps.clock.now(), deps.leaseMs);
      } catch (e: unknown) {
        deps.log.warn({ err: e }, 'repository scan claim failed');
        claimed = undefined;
      }
      if (claimed) {
        // A store that fails while the scan ends leaves it processing: its lease runs out and it is retried.
        await runRepoScan(deps, claimed.scan, claimed.lease).catch((e: unknown) => deps.log.error({ err: e, scanId: claimed!.scan.id }, 'repository scan did not end'));
      }
      else await new Promise((r) => setTimeout(r, pollMs));
    }
  })();
  return async () => {
    stopped = true;
    // A scan in progress may be minutes from its end (a large clone): stopping does not wait for
    // it. Its lease runs out and another worker starts it over, as after a crash.
    await Promise.race([loop, new Promise((r) => setTimeout(r, STOP_WAIT_MS).unref())]);
  };
}

/** The answer for a scan in any state: while processing, the shape with nothing found yet. */
export function repoScanView(scan: RepoScanRecord): ExposedKeysResult & { error_code: string | null } {
  if (scan.result) return { ...(JSON.parse(scan.result) as ExposedKeysResult), error_code: scan.errorCode };
  const config = JSON.parse(scan.config) as ScanConfig;
  const type = scan.type as ScanType;
  return {
    scan_id: scan.id,
    repository_id: scan.url,
    kind: REPOSITORY_KIND,
    target: scan.url,
    type,
    commit_sha: null,
    depth: null,
    config,
    summary: {
      total: 0,
      by_severity: { critical: 0, high: 0, medium: 0, low: 0 },
      by_engine: { gitleaks: 0, secretlint: 0 },
      engines_run: enginesOf(type),
      rules_requested: rulesRequested(config.rules, type),
      deep_scan: true,
      duration_ms: 0,
      suppressed: 0,
      validated: 0,
      live: 0,
      truncated: false,
    },
    findings: [],
    reused: false,
    charged: false,
    credits: 0,
    status: scan.status as ExposedKeysResult['status'],
    error_code: scan.errorCode,
  };
}
