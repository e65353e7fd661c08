/** An abort signal that follows other signals and a timer of its own. */
export interface LinkedSignal {
  readonly signal: AbortSignal;
  /** True once the timer (not a source) aborted the signal. */
  timedOut(): boolean;
  /** Starts the timeout over; streams call it on every chunk so the limit is on silence, not length. */
  restartTimer(): void;
  /** Stops the timer until {@link restartTimer} (time spent waiting for a person is not the work's time). */
  pauseTimer(): void;
  /** Stops the timer and detaches from the sources. */
  dispose(): void;
}

/**
 * A signal that aborts when any of `sources` does (with its reason) or after `timeoutMs` (with a `TimeoutError`).
 * What `AbortSignal.any([...sources, AbortSignal.timeout(ms)])` gives, but the timer can be restarted and
 * stopped, and nothing stays registered on the sources after {@link LinkedSignal.dispose}. A model call uses it
 * for one attempt (the SDK's own timeout only covers waiting for the response headers, not a body or a stream
 * that stalls afterwards), and a turn for its timeout. `AbortSignal.any` with `AbortSignal.timeout` would leave
 * a timer and weak references behind until collected.
 */
export function linkAbortSignals(
  sources: readonly (AbortSignal | undefined)[],
  timeoutMs: number,
): LinkedSignal {
  const controller = new AbortController();
  const linked = sources.filter((source): source is AbortSignal => source !== undefined);
  let timedOut = false;
  let timer: ReturnType<typeof setTimeout> | undefined;

  const onSourceAbort = (event: Event) => controller.abort((event.target as AbortSignal).reason);
  const aborted = linked.find((source) => source.aborted);
  if (aborted !== undefined) controller.abort(aborted.reason);
  else for (const source of linked) source.addEventListener("abort", onSourceAbort, { once: true });

  const startTimer = () => {
    timer = setTimeout(() => {
      if (controller.signal.aborted) return; // a source was first
      timedOut = true;
      controller.abort(new DOMException(`No answer within ${timeoutMs} ms`, "TimeoutError"));
    }, timeoutMs);
    // Whatever the signal guards keeps the process alive while it runs; the timer alone does not.
    timer.unref();
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
    pauseTimer() {
      clearTimeout(timer);
    },
    dispose() {
      clearTimeout(timer);
      for (const source of linked) source.removeEventListener("abort", onSourceAbort);
    },
  };
}
