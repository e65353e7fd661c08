// The summary queue's waits: the default retry backoff, the default abortable sleep, and the shutdown deadline.

/** The default delay before run `attempt + 1`: 2 s doubling, at most 5 min. */
export function defaultBackoff(attempt: number): number {
  return Math.min(300_000, 2_000 * 2 ** Math.max(0, attempt - 1));
}

/** The default sleep: waits `ms` on a timer unless `signal` fires first. */
export function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    }
    signal.addEventListener("abort", done, { once: true });
  });
}

/** Resolves true when `promise` settles within `ms`, false otherwise (a real timer: shutdown is wall-clock). */
export function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  return Promise.race([
    promise.then(
      () => true,
      () => true,
    ),
    timeout,
  ]).finally(() => clearTimeout(timer));
}
