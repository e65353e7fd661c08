/** Options of {@link waitUntil}. */
export interface WaitUntilOptions {
  /** Give up after this long; default 5000 ms. */
  readonly timeoutMs?: number;
  /** How often to check; default 10 ms. */
  readonly intervalMs?: number;
  /** Named in the timeout error, e.g. "the reply to arrive". */
  readonly what?: string;
}

/**
 * Polls `check` (awaited when it returns a promise, such as an HTTP request) until it gives something other
 * than `undefined`/`false` and returns that value; rejects after the timeout. For waiting on what a fake
 * recorded or a server reports instead of sleeping a fixed time.
 */
export async function waitUntil<T>(
  check: () => T | undefined | false | Promise<T | undefined | false>,
  options: WaitUntilOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 5000;
  const intervalMs = options.intervalMs ?? 10;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() >= deadline) {
      throw new Error(
        `waitUntil: timed out after ${timeoutMs} ms waiting for ${options.what ?? "the condition"}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
