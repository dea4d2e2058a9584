import { checkSyntax } from '../src/lookups/validity/syntax.js';
import { VALIDITY_KIND, VALIDITY_STATUSES, type ValidityResult } from '../src/lookups/validity/validity-result.js';
import { ERROR_CODES } from '../src/shared/errors.js';
import { unwrapCell } from './cell-text.js';
import { normaliseEmail } from './gender.js';
import { EMAIL_ALIASES } from './key-aliases.js';
import type { NormaliseResult, Pipeline } from './pipeline.js';

/**
 * The email cell as the other email jobs read it, so that an address is one billing key in every
 * email job; where they refuse an address that RFC 5321 allows (a quoted local part, a Unicode
 * domain), the verifier's own syntax step reads it (`"john doe"@x.com`, `info@bücher.de` as punycode).
 */
export function normaliseForValidity(raw: string): NormaliseResult {
  const read = normaliseEmail(raw);
  if (read.ok || read.code !== ERROR_CODES.invalidEmail) return read;
  const syntax = checkSyntax(unwrapCell(raw));
  return syntax.ok ? { ok: true, key: syntax.address } : read;
}

/**
 * Job type `validity`: whether each address can receive mail (docs/email-verification.md). A row
 * whose check could not finish (greylisting past the retries, a time-out, no SMTP reachable,
 * DNS failing) is an `error` row with that reason as its error code: not charged, not cached,
 * and redone by `retry-failed`.
 */
export const validityPipeline: Pipeline<ValidityResult> = {
  type: 'validity',
  lookupKind: VALIDITY_KIND,
  keyHeader: 'email',
  keyAliases: EMAIL_ALIASES,
  headerless: true,
  normalise: normaliseForValidity,
  deferFailures: true,
  // `validity`, not `status`: the engine's own `status` column says whether the row was looked up.
  resultColumns: ['validity', 'validity_reason', 'disposable', 'role_account', 'free_provider', 'catch_all', 'mx_host', 'smtp_code'],
  resultCells(result: ValidityResult): string[] {
    return [
      result.status,
      result.reason,
      String(result.flags.disposable),
      String(result.flags.role_account),
      String(result.flags.free_provider),
      result.catch_all === null ? '' : String(result.catch_all),
      result.smtp?.host ?? result.mx[0] ?? '',
      result.smtp?.code === null || result.smtp?.code === undefined ? '' : String(result.smtp.code),
    ];
  },
  isFound(result: ValidityResult): boolean {
    return result.status === VALIDITY_STATUSES.valid;
  },
};
