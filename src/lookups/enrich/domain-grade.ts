import type { DmarcReport } from './dmarc-check.js';
import type { DnssecStatus } from './dnssec-probe.js';
import type { DkimReport } from './mail-auth-records.js';
import type { MtaStsPolicy } from './mta-sts-policy.js';
import type { SpfReport } from './spf-check.js';

export type Grade = 'A' | 'B' | 'C' | 'D' | 'F';

export interface GradeInput {
  spf: SpfReport;
  dmarc: DmarcReport;
  dkim: DkimReport;
  mtaSts: { record: string | null; policy: MtaStsPolicy | null };
  tlsRpt: boolean;
  bimi: boolean;
  dnssec: DnssecStatus;
}

/**
 * The rubric of docs/email-enrich-compliance.md, out of 100: how hard the domain makes it to forge
 * its mail and to intercept mail to it. No SPF and no DMARC at all is F whatever else is there.
 */
export function gradeDomain(input: GradeInput): { grade: Grade; score: number } {
  let score = 0;
  const all = /\s[-~]all(\s|$)/.test(input.spf.record ?? '');
  if (input.spf.record !== null && input.spf.result !== 'permerror' && input.spf.result !== 'temperror') score += all ? 25 : 10;
  const p = input.dmarc.policy;
  score += p === 'reject' ? 30 : p === 'quarantine' ? 25 : p === 'none' ? 10 : 0;
  if (p !== null && p !== 'none' && input.dmarc.pct < 100) score -= 5;
  if (input.dkim.status === 'found') score += 15;
  const mode = input.mtaSts.policy?.mode;
  if (input.mtaSts.record !== null) score += mode === 'enforce' ? 10 : mode === 'testing' ? 5 : 0;
  if (input.tlsRpt) score += 5;
  if (input.dnssec === 'secure') score += 10;
  if (input.bimi) score += 5;
  if (input.spf.record === null && input.dmarc.record === null) return { grade: 'F', score };
  const grade: Grade = score >= 85 ? 'A' : score >= 70 ? 'B' : score >= 50 ? 'C' : score >= 30 ? 'D' : 'F';
  return { grade, score };
}
