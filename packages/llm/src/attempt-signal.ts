/** The abort signal of one HTTP attempt: the caller's signal plus our own timeout timer. */
export interface AttemptSignal {
  readonly signal: AbortSignal;
  /** True once the timer (not the caller) aborted the attempt. */
  timedOut(): boolean;
  /** Starts the timeout over; streams call it on every chunk so the limit is on silence, not length. */
  restartTimer(): void;
  /** Stops the timer and detaches from the caller's signal. */
  dispose(): void;
}

/**
 * Links the caller's signal with a timer of `timeoutMs`.
 * We keep our own timer because the SDK's timeout only covers waiting for response headers,
 * not a body or a stream that stalls afterwards.
 */
export function createAttemptSignal(callerSignal: AbortSignal | undefined, timeoutMs: number): AttemptSignal {
  const controller = new AbortController();
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const onCallerAbort = () => controller.abort(callerSignal?.reason);
  if (callerSignal?.aborted) onCallerAbort();
  else callerSignal?.addEventListener("abort", onCallerAbort, { once: true });

  const startTimer = () => {
    timer = setTimeout(() => {
      timedOut = true;
      controller.abort(new DOMException(`No answer within ${timeoutMs} ms`, "TimeoutError"));
    }, timeoutMs);
  };
  if (!controller.signal.aborted) startTimer();

  return {
    signal: controller.signal,
    timedOut: () => timedOut,
    restartTimer() {
      if (controller.signal.aborted) return;
      clearTimeout(timer);
      startTimer();
    },
    dispose() {
      clearTimeout(timer);
      callerSignal?.removeEventListener("abort", onCallerAbort);
    },
  };
}
