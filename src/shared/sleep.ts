/**
 * Waits `ms`, or less if `signal` aborts; never rejects. The abort listener goes when the wait
 * ends, so a long-lived signal (a chunk's lease) does not collect one per wait.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
