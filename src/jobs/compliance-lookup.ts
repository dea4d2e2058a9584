import { createHash, randomUUID } from 'node:crypto';
import { ccTldCountry } from '../lookups/compliance/compliance-rules.js';
import { complianceVerdict, type ComplianceVerdict } from '../lookups/compliance/compliance-verdict.js';
import type { DomainInfo } from '../lookups/enrich/rdap-client.js';
import { flagsOf } from '../lookups/validity/flags.js';
import { checkSyntax } from '../lookups/validity/syntax.js';
import { VALIDITY_KIND, type ValidityResult } from '../lookups/validity/validity-result.js';
import type { EngineDeps } from './engine-deps.js';

export const COMPLIANCE_KIND = 'compliance';
const DAY_MS = 86_400_000;

export type ComplianceAnswer = ComplianceVerdict & { email: string; credits: number; checking?: true; result_id?: number };

export type ComplianceLookup =
  | { ok: true; answer: ComplianceAnswer }
  | { ok: false; reason: 'invalid' | 'insufficient_credits' | 'unavailable' };

export interface ComplianceLookupDeps {
  engine: EngineDeps;
  /** Registration data (RDAP), for the registrant's country; absent: that signal is missing. */
  registration?: ((domain: string, signal?: AbortSignal) => Promise<DomainInfo | null>) | undefined;
  /** The mail servers' country from imported IP network data; absent or null: that signal is missing. */
  mailServerCountry?: ((domain: string, signal?: AbortSignal) => Promise<string | null>) | undefined;
}

/**
 * A compliance verdict (spec 4.3) with the provisional-then-settled flow: the verdict needs the
 * verifier's deliverability, and a greylisting or slow server can keep that open past the deadline.
 * Then the answer is provisional (`checking: true`, `result_id` the stored check); asking again
 * runs the verifier again and, once it settles, stores and answers the settled verdict, which every
 * later repeat in the window reads back without asking any server. 1 credit on the first lookup of
 * the address (provisional or not); repeats in the repeat-free window are free. No webhook event.
 */
export async function complianceLookup(deps: ComplianceLookupDeps, accountId: string, raw: string, signal: AbortSignal): Promise<ComplianceLookup> {
  const syntax = checkSyntax(raw);
  if (!syntax.ok) return { ok: false, reason: 'invalid' };
  const engine = deps.engine;
  const verifier = engine.providers.get(VALIDITY_KIND);
  if (verifier === undefined) return { ok: false, reason: 'unavailable' };
  const { address: key, local, domain } = syntax;
  const keyHash = createHash('sha256').update(key).digest('hex');
  const since = engine.clock.now() - engine.repeatFreeDays * DAY_MS;
  const repeat = (await engine.billing.freshlyBilled(accountId, COMPLIANCE_KIND, [key], since)).has(key);
  if (!repeat && (await engine.billing.available(accountId)) <= 0) return { ok: false, reason: 'insufficient_credits' };

  const check = await engine.store.complianceChecks.latest(accountId, keyHash, since);
  if (repeat && check?.settledAt != null) return { ok: true, answer: { ...(check.answer as ComplianceVerdict), email: key, credits: 0 } };

  const [outcome, registration, mailCountry] = await Promise.all([
    verifier.lookup([key], signal).then((o) => o[0]),
    deps.registration ? deps.registration(domain, signal).catch(() => null) : Promise.resolve(null),
    deps.mailServerCountry ? deps.mailServerCountry(domain, signal).catch(() => null) : Promise.resolve(null),
  ]);
  const settled = outcome?.ok === true ? (outcome.result as ValidityResult) : undefined;
  const flags = flagsOf(local, domain);
  const verdict = complianceVerdict({
    cctld_country: ccTldCountry(domain),
    registration_country: registration?.registrant_country ?? null,
    mail_server_country: mailCountry,
    role_account: flags.role_account,
    disposable: flags.disposable,
    free_provider: flags.free_provider,
    deliverability: settled?.status ?? null,
  });

  let credits = 0;
  if (!repeat) {
    const now = engine.clock.now();
    const committed = await engine.billing.commitLookup({ accountId, kind: COMPLIANCE_KIND, charge: { type: 'repeat_free', key, since, batchId: randomUUID() }, cache: [], now });
    if (!committed.ok) return { ok: false, reason: 'insufficient_credits' };
    credits = committed.credits;
  }
  const now = engine.clock.now();
  const id = check !== undefined && check.settledAt === null ? check.id : await engine.store.complianceChecks.open(accountId, keyHash, now);
  if (settled !== undefined) {
    await engine.store.complianceChecks.settle(id, verdict, now);
    return { ok: true, answer: { email: key, ...verdict, credits } };
  }
  return { ok: true, answer: { email: key, ...verdict, credits, checking: true, result_id: id } };
}
