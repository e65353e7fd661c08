/** Options of {@link waitUntil}. */
export interface WaitUntilOptions {
  /** Give up after this many ms; default 5,000. */
  readonly timeoutMs?: number;
  /** Poll interval; default 10 ms. */
  readonly intervalMs?: number;
  /** Describes what was awaited, for the timeout error. */
  readonly message?: string;
}

/**
 * Polls `probe` until it returns a value other than `undefined`/`false`, and returns that value.
 * Tests wait on recorded events with it instead of sleeping for a guessed time.
 * @throws Error naming `message` when `timeoutMs` passes first.
 */
export async function waitUntil<T>(
  probe: () => T | undefined | false,
  options: WaitUntilOptions = {},
): Promise<T> {
  const timeoutMs = options.timeoutMs ?? 5_000;
  const intervalMs = options.intervalMs ?? 10;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() >= deadline) {
      throw new Error(
        `waitUntil: timed out after ${timeoutMs} ms waiting for ${options.message ?? "a condition"}`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
