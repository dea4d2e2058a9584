import { sleep } from './sleep.js';

/**
 * Calls `tick` at once and then every `everyMs`, one call at a time (a tick still running when
 * the next is due is not doubled), until the returned function is called; that resolves once a
 * tick in progress has ended, so the store is not closed under it. A failed tick goes to
 * `onError` and the next one tries again: a database blip must not stop the process that hosts
 * the loop. The monitors' and the workflows' schedules both run on it.
 */
export function tickPeriodically(tick: () => Promise<unknown>, everyMs: number, onError: (error: unknown) => void): () => Promise<void> {
  let running: Promise<void> | undefined;
  const once = (): void => {
    if (running) return;
    running = tick()
      .then(() => undefined)
      .catch(onError)
      .finally(() => {
        running = undefined;
      });
  };
  once();
  const interval = setInterval(once, everyMs);
  interval.unref();
  return async () => {
    clearInterval(interval);
    await running;
  };
}

/**
 * Calls `step` back to back while it finds work (it returns true), else once every `pollMs`,
 * until the returned function is called; that aborts the signal `step` gets and resolves once the
 * step in progress has ended. A step that throws (a failed claim) goes to `onError` and is tried
 * again after `pollMs`. The monitor and workflow run drivers both run on it.
 */
export function driveUntilStopped(step: (signal: AbortSignal) => Promise<boolean>, pollMs: number, onError: (error: unknown) => void): () => Promise<void> {
  const stop = new AbortController();
  const loop = (async () => {
    while (!stop.signal.aborted) {
      let worked = false;
      try {
        worked = await step(stop.signal);
      } catch (e: unknown) {
        onError(e);
      }
      if (!worked) await sleep(pollMs, stop.signal);
    }
  })();
  return async () => {
    stop.abort();
    await loop;
  };
}
