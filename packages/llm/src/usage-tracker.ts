import type { Usage } from "@almanac/core";

/** Running totals of one model client since it was created. */
export interface UsageTotals {
  /** Calls finished (`complete` or `stream`), successful or not. */
  readonly calls: number;
  readonly promptTokens: number;
  readonly completionTokens: number;
  readonly totalTokens: number;
  /** Retries made (attempts beyond the first), across all calls. */
  readonly retries: number;
  /** Calls that ended in an error. */
  readonly failures: number;
}

/** Accumulates {@link UsageTotals}; owned by one model instance. */
export interface UsageTracker {
  recordSuccess(usage: Usage | undefined): void;
  recordFailure(): void;
  recordRetry(): void;
  /** A frozen snapshot. */
  totals(): UsageTotals;
}

/** Creates a tracker starting at zero. */
export function createUsageTracker(): UsageTracker {
  let calls = 0;
  let promptTokens = 0;
  let completionTokens = 0;
  let totalTokens = 0;
  let retries = 0;
  let failures = 0;
  return {
    recordSuccess(usage) {
      calls += 1;
      if (usage === undefined) return;
      promptTokens += usage.promptTokens;
      completionTokens += usage.completionTokens;
      totalTokens += usage.totalTokens;
    },
    recordFailure() {
      calls += 1;
      failures += 1;
    },
    recordRetry() {
      retries += 1;
    },
    totals: () => Object.freeze({ calls, promptTokens, completionTokens, totalTokens, retries, failures }),
  };
}
