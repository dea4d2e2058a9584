// Types for test/security/dependency-audit.test.ts; the script itself is plain JavaScript so that
// .ci/run can run it before anything is built.
export interface Advisory {
  id: string;
  package: string;
  vulnerable: string;
  fixedIn?: string | null;
  severity?: string;
  summary?: string;
}
export interface Acceptance {
  id: string;
  package: string;
  reason: string;
}
export interface Installed {
  name: string;
  version: string;
  path: string;
  runtime: boolean;
}
export interface Finding extends Installed {
  id: string;
  severity?: string;
  fixedIn: string | null;
  summary?: string;
}
export function installedPackages(lock: unknown): Installed[];
export function lockfileFindings(lock: unknown, advisories: Advisory[]): Finding[];
export function npmAuditFindings(report: unknown, lock: unknown): Finding[];
export function verdict(
  findings: Finding[],
  accepted: Acceptance[],
): { failing: Finding[]; devOnly: Finding[]; accepted: (Finding & { reason: string })[]; stale: Acceptance[]; ok: boolean };
