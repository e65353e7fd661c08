/** Options of {@link startTypingLoop}. */
export interface TypingLoopOptions {
  /** Posts the indicator once (Discord: `POST /channels/:id/typing`, shown for ~10 s). */
  readonly pulse: () => Promise<void>;
  readonly intervalMs: number;
  /** A failed pulse is reported here and the loop goes on: a missing indicator must not fail a turn. */
  readonly onError: (error: unknown) => void;
}

/**
 * Pulses the typing indicator now and every `intervalMs` until the returned function is called.
 * Resolves after the first pulse settled, so the indicator shows before the turn's work starts.
 */
export async function startTypingLoop(options: TypingLoopOptions): Promise<() => Promise<void>> {
  let stopped = false;
  const pulse = async (): Promise<void> => {
    try {
      await options.pulse();
    } catch (error) {
      if (!stopped) options.onError(error);
    }
  };
  await pulse();
  const timer = setInterval(() => void pulse(), options.intervalMs);
  timer.unref();
  return async () => {
    stopped = true;
    clearInterval(timer);
  };
}
