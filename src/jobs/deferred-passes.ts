/** Deferred passes a chunk gets for rows a lookup could not settle for the moment. */
export const DEFER_PASSES = 4;

/**
 * When the chunk's failed rows should be tried again, if its lookups defer failures and passes are
 * left: the first wait SLUICE_DEFER_RETRY_MS, doubled each pass (greylisting servers let a sender
 * through after minutes, not seconds).
 */
export function deferredRetryAt(
  ctx: { deps: { limits: { deferRetryMs: number } }; chunk: { pass: number }; lookups: readonly { pipeline: { deferFailures?: boolean } }[] },
  now: number,
): number | undefined {
  if (!ctx.lookups.some((l) => l.pipeline.deferFailures === true) || ctx.chunk.pass >= DEFER_PASSES) return undefined;
  return now + ctx.deps.limits.deferRetryMs * 2 ** ctx.chunk.pass;
}
