import type { BillingKeys } from '../billing-key.js';
import { chargeLedgerId } from '../ledger-ids.js';
import { leaseLost } from '../lease-lost.js';
import type { BatchCommit, BatchCommitResult } from '../store.js';
import { AppError, ERROR_CODES } from '../../shared/errors.js';
import { accountNotFound } from './pg-core-charges.js';
import type { PgQueryable } from './pg-database.js';

/**
 * The checkpoint as one call of `sluice_checkpoint` (migration 020): one round trip and one
 * statement, committed on its own, where the transaction of statements took thirteen. It writes
 * nothing and answers 'slow' when the batch may end or pause the job (its error budget crossed, or
 * the batch cut short by credits): those go through the transaction, which builds the job's events.
 */
const CALL = `SELECT outcome, billed_kind AS "billedKind", billed_hash AS "billedHash", balance
  FROM sluice_checkpoint($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)`;

/** SQLSTATE the function raises when its batch takes the job past its error budget. */
const CROSSED_BUDGET = 'SLW01';

interface Answer {
  outcome: 'ok' | 'lease_lost' | 'stopped' | 'refused' | 'slow';
  billedKind: number[] | null;
  billedHash: Buffer[] | null;
  balance: number | null;
}

/** The outcome, or 'slow' / 'stopped' for the caller to handle as the transaction did. */
export async function callCheckpoint(db: PgQueryable, names: BillingKeys, input: BatchCommit): Promise<BatchCommitResult | 'slow' | 'stopped'> {
  const { kinds, keys, batchId, since } = input.charges;
  const keyKind: number[] = [];
  const keyHash: Buffer[] = [];
  const keyOf = new Map<string, string>();
  kinds.forEach((kind, k) => {
    for (const key of keys[k] ?? []) {
      const hash = names.hash(kind, key);
      keyKind.push(k);
      keyHash.push(hash);
      keyOf.set(`${k}:${hash.toString('hex')}`, key);
    }
  });
  const ledgerIds = kinds.map((kind, k) => chargeLedgerId(input.accountId, input.jobId, k === 0 ? batchId : `${batchId}:${kind}`));
  // A (kind, key) given twice keeps the last answer, as one put after the other would.
  const last = new Map<string, { kind: string; key: string; result: unknown }>();
  for (const e of input.cache) last.set(`${e.kind}\0${e.key}`, e);
  const cache = [...last.values()];
  const c = input.counters;
  const { rows } = await callOnce(db, [
    input.jobId,
    input.chunkIndex,
    input.lease.epoch,
    input.lease.owner,
    input.cursor,
    input.rows,
    input.accountId,
    kinds,
    keyKind,
    keyHash,
    since,
    ledgerIds,
    cache.map((e) => e.kind),
    cache.map((e) => e.key),
    cache.map((e) => JSON.stringify(e.result)),
    input.output.allText,
    input.output.rowFlags,
    input.output.rowEnds,
    [c.processed, c.found, c.invalid, c.duplicate, c.error, c.credits],
    input.errorBudget?.maxErrorRate ?? null,
    input.outOfCredits,
    input.now,
  ]).catch((error: unknown) => {
    // Crossing the error budget is found under the counters' row lock, after the writes: undone.
    if ((error as { code?: string }).code === CROSSED_BUDGET) return { rows: [{ outcome: 'slow', billedKind: null, billedHash: null, balance: null } as Answer] };
    throw asDomainError(error, input.accountId);
  });
  const answer = rows[0]!;
  switch (answer.outcome) {
    case 'ok':
      return { ok: true, paused: false, failed: false };
    case 'lease_lost':
      throw leaseLost(`chunk ${input.chunkIndex} of ${input.jobId}`);
    case 'refused': {
      const billed = kinds.map(() => new Set<string>());
      (answer.billedHash ?? []).forEach((hash, i) => {
        const k = answer.billedKind![i]!;
        const key = keyOf.get(`${k}:${hash.toString('hex')}`);
        if (key !== undefined) billed[k]!.add(key);
      });
      return { ok: false, billed, balance: answer.balance ?? 0 };
    }
    default:
      return answer.outcome;
  }
}

function callOnce(db: PgQueryable, params: unknown[]): Promise<{ rows: Answer[] }> {
  return db.query<Answer>(CALL, params);
}

/** The function's own RAISEs, as the transaction of statements reported them. */
function asDomainError(error: unknown, accountId: string): unknown {
  const { code, message } = error as { code?: string; message?: string };
  if (code === 'P0001') return new AppError(ERROR_CODES.internal, message ?? 'checkpoint refused');
  if (code === 'P0002') return accountNotFound(accountId);
  return error;
}
