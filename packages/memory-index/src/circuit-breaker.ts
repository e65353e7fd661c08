/** `closed`: calls go through. `open`: calls are refused until the cool-down ends. `half-open`: one trial call. */
export type CircuitState = "closed" | "open" | "half-open";

/** Options of {@link createCircuitBreaker}. */
export interface CircuitBreakerOptions {
  /** Consecutive failures that open the circuit (default 3). */
  readonly failureThreshold?: number;
  /** First cool-down, in ms (default 30 000); it doubles after each failed trial. */
  readonly cooldownMs?: number;
  /** Longest cool-down, in ms (default 300 000). */
  readonly maxCooldownMs?: number;
  /** Current time in ms (injected so tests need no sleeps). */
  readonly clock?: () => number;
}

/** Stops calling a failing dependency for a while, then lets one trial call through. */
export interface CircuitBreaker {
  state(): CircuitState;
  /** Whether a call may start now. In half-open state only one trial at a time is allowed. */
  tryAcquire(): boolean;
  recordSuccess(): void;
  recordFailure(): void;
  /** The call was cancelled by its caller: neither success nor failure (frees a half-open trial). */
  recordCancelled(): void;
  /** Consecutive failures so far. */
  failures(): number;
}

function positive(value: number | undefined, fallback: number, name: string): number {
  if (value === undefined) return fallback;
  if (!Number.isFinite(value) || value <= 0)
    throw new RangeError(`createCircuitBreaker: ${name} must be > 0`);
  return value;
}

/** Creates a circuit breaker; time comes from the injected clock only. */
export function createCircuitBreaker(options: CircuitBreakerOptions = {}): CircuitBreaker {
  const threshold = positive(options.failureThreshold, 3, "failureThreshold");
  const firstCooldown = positive(options.cooldownMs, 30_000, "cooldownMs");
  const maxCooldown = Math.max(firstCooldown, positive(options.maxCooldownMs, 300_000, "maxCooldownMs"));
  const clock = options.clock ?? Date.now;
  let consecutiveFailures = 0;
  let openedAt: number | undefined;
  let cooldown = firstCooldown;
  let trialInFlight = false;

  const state = (): CircuitState => {
    if (openedAt === undefined) return "closed";
    return clock() - openedAt >= cooldown ? "half-open" : "open";
  };

  return {
    state,
    tryAcquire() {
      switch (state()) {
        case "closed":
          return true;
        case "open":
          return false;
        case "half-open":
          if (trialInFlight) return false;
          trialInFlight = true;
          return true;
      }
    },
    recordSuccess() {
      consecutiveFailures = 0;
      openedAt = undefined;
      cooldown = firstCooldown;
      trialInFlight = false;
    },
    recordFailure() {
      consecutiveFailures += 1;
      if (openedAt !== undefined) {
        // A failed trial: wait longer before the next one.
        if (trialInFlight) cooldown = Math.min(maxCooldown, cooldown * 2);
        openedAt = clock();
      } else if (consecutiveFailures >= threshold) {
        openedAt = clock();
      }
      trialInFlight = false;
    },
    recordCancelled() {
      trialInFlight = false;
    },
    failures: () => consecutiveFailures,
  };
}
