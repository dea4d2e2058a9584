import type { BillingKeys } from '../billing-key.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { chargeLedgerId } from '../ledger-ids.js';
import type { LookupCommit } from '../store.js';
import { billedAfter, debit, insertLedgerLine, lockAccount, recordBilled, spendable } from './pg-core-charges.js';
import { addToOutbox, subscribed } from './pg-core-outbox.js';
import type { PgDatabase, PgQueryable } from './pg-database.js';
import { putResults } from './pg-results.js';

/**
 * One single lookup's charge, its cache writes and its event, in one READ COMMITTED transaction
 * under the account's row lock, like a checkpoint's charges: a repeat-free key is charged once
 * however many lookups and jobs race for it, and the balance never goes below 0.
 */
export function commitLookup(db: PgDatabase, names: BillingKeys, input: LookupCommit): Promise<{ ok: true; credits: number } | { ok: false }> {
  return db.transaction(async (tx) => {
    const credits = await chargeLookup(tx, names, input);
    if (credits === undefined) return { ok: false };
    await putResults(tx, input.cache, input.now);
    if (input.event) {
      const event = input.event(credits);
      if (await subscribed(tx, event.accountId, event.event)) await addToOutbox(tx, event, input.now);
    }
    return { ok: true, credits };
  });
}

/** Credits charged, or undefined (nothing written) when the balance cannot pay. */
async function chargeLookup(tx: PgQueryable, names: BillingKeys, input: LookupCommit): Promise<number | undefined> {
  const { accountId, kind, charge, now } = input;
  const account = await lockAccount(tx, accountId);
  if (charge.type === 'repeat_free') {
    const [billed] = await billedAfter(tx, names, account.seq, [kind], [[charge.key]], charge.since);
    if (billed!.has(charge.key)) return 0;
    if ((await spendable(tx, accountId, account.credits, undefined)) < 1) return undefined;
    await debit(tx, accountId, 1);
    // As bulk batches are charged, under the job id 'single'; a random batch id never collides.
    const ledgerSeq = await insertLedgerLine(tx, { id: chargeLedgerId(accountId, 'single', charge.batchId), accountId, delta: -1, reason: 'charge', kind, jobId: 'single', now });
    if (ledgerSeq === undefined) throw new AppError(ERROR_CODES.internal, `lookup ${charge.batchId} was already charged for ${kind}`);
    await recordBilled(tx, names, account.seq, [{ kind, key: charge.key, ledgerSeq }], now);
    return 1;
  }
  const { amount } = charge;
  if (amount <= 0) return 0;
  if (!Number.isSafeInteger(amount)) throw new AppError(ERROR_CODES.internal, `a call costs a whole number of credits, not ${amount}`);
  if ((await spendable(tx, accountId, account.credits, undefined)) < amount) return undefined;
  await debit(tx, accountId, amount);
  // Outside the repeat-free window: no billing-cache row, and no job.
  const ledgerSeq = await insertLedgerLine(tx, { id: chargeLedgerId(accountId, 'call', charge.callId), accountId, delta: -amount, reason: 'charge', kind, jobId: null, now });
  if (ledgerSeq === undefined) throw new AppError(ERROR_CODES.internal, `call ${charge.callId} was already charged`);
  return amount;
}
