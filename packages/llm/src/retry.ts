// Hand-rolled on purpose. The SDK's own retries (which we switch off) would retry
// `insufficient_quota` 429s and hide every retry from our logs and metrics; p-retry and
// async-retry schedule their own backoff and offer no clean way to wait the Retry-After one
// particular failure asked for (or to refuse a too-long one). This is a few dozen lines we can test.

import type { AlmanacError } from "@almanac/core";
import { ModelError } from "./model-error.js";

/** How often and how long to retry. */
export interface RetryPolicy {
  /** Retries after the first attempt (0 = try once). */
  readonly maxRetries: number;
  /** Base of the exponential backoff: attempt n waits up to base × 2^(n-1). */
  readonly baseDelayMs: number;
  /** Ceiling of the computed backoff (not of a provider's Retry-After). */
  readonly maxDelayMs: number;
  /** A Retry-After longer than this is not waited for: the error surfaces instead. */
  readonly maxRetryAfterMs: number;
  /** Source of jitter in [0, 1); injectable for tests. */
  readonly random?: () => number;
}

/** Waits `ms` milliseconds; must reject promptly when `signal` aborts. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/** One retry about to happen, for logs, metrics and stream events. */
export interface RetryInfo {
  /** The attempt that failed (1-based); the next one is `attempt + 1`. */
  readonly attempt: number;
  readonly delayMs: number;
  readonly error: ModelError;
}

/** Real-time sleep that rejects with the signal's reason as soon as the signal aborts. */
export const abortableSleep: Sleep = (ms, signal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });

/**
 * How long to wait before retrying after `error` ended attempt number `attempt`, or undefined
 * when the error must surface: not retryable, retries used up, or a Retry-After above the cap.
 * Without a Retry-After: exponential backoff with full jitter (random in [0, min(max, base × 2^(n-1))]).
 */
export function retryDelayMs(error: unknown, attempt: number, policy: RetryPolicy): number | undefined {
  if (!(error instanceof ModelError) || !error.isRetryable) return undefined;
  if (attempt > policy.maxRetries) return undefined;
  if (error.retryAfterMs !== undefined) {
    return error.retryAfterMs > policy.maxRetryAfterMs ? undefined : error.retryAfterMs;
  }
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** (attempt - 1));
  return Math.floor((policy.random ?? Math.random)() * ceiling);
}

/** Options of {@link withRetry}. */
export interface WithRetryOptions {
  readonly policy: RetryPolicy;
  readonly sleep: Sleep;
  readonly signal?: AbortSignal | undefined;
  /** Turns whatever `run` or `sleep` threw into an Almanac error (ModelErrors pass through). */
  readonly classify: (error: unknown) => AlmanacError;
  readonly onRetry?: (info: RetryInfo) => void;
}

/** Runs `run(attempt)` until it succeeds or fails for good; resolves with the value and the attempts used. */
export async function withRetry<T>(
  run: (attempt: number) => Promise<T>,
  options: WithRetryOptions,
): Promise<{ readonly value: T; readonly attempts: number }> {
  for (let attempt = 1; ; attempt += 1) {
    let failure: AlmanacError;
    try {
      return { value: await run(attempt), attempts: attempt };
    } catch (error) {
      failure = options.classify(error);
    }
    const delayMs = retryDelayMs(failure, attempt, options.policy);
    if (delayMs === undefined || !(failure instanceof ModelError)) throw failure;
    options.onRetry?.({ attempt, delayMs, error: failure });
    try {
      await options.sleep(delayMs, options.signal);
    } catch (error) {
      throw options.classify(error);
    }
  }
}
