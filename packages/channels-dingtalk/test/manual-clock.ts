// Test support only: a clock that moves when the test says so.
import type { DingTalkClock } from "../src/types.js";

/** A {@link DingTalkClock} whose time moves only by {@link ManualClock.advance}; sleeps resolve when it passes them. */
export interface ManualClock extends DingTalkClock {
  /** Moves the time on and resolves every sleep that is due. */
  advance(ms: number): void;
  /** Sleeps waiting for the time to pass. */
  pendingSleeps(): number;
}

/** A manual clock starting at the real time (so sessionWebhook expiry times from the fake stay meaningful). */
export function createManualClock(start = Date.now()): ManualClock {
  let now = start;
  const sleepers = new Set<{ readonly until: number; readonly wake: () => void }>();
  return {
    now: () => now,
    sleep(ms, signal) {
      if (ms <= 0 || signal?.aborted === true) return Promise.resolve();
      return new Promise((resolve) => {
        const sleeper = {
          until: now + ms,
          wake: () => {
            sleepers.delete(sleeper);
            resolve();
          },
        };
        sleepers.add(sleeper);
        signal?.addEventListener("abort", sleeper.wake, { once: true });
      });
    },
    advance(ms) {
      now += ms;
      for (const sleeper of [...sleepers]) if (sleeper.until <= now) sleeper.wake();
    },
    pendingSleeps: () => sleepers.size,
  };
}
