import { InternalError } from "@almanac/core";
import { describe, expect, it } from "vitest";
import { ModelError } from "./model-error.js";
import { abortableSleep, type RetryPolicy, retryDelayMs, withRetry } from "./retry.js";

const policy: RetryPolicy = {
  maxRetries: 3,
  baseDelayMs: 100,
  maxDelayMs: 250,
  maxRetryAfterMs: 5000,
  random: () => 0.999,
};

const serverError = () => new ModelError("server", "boom", { status: 500 });

describe("retryDelayMs", () => {
  it("grows the backoff ceiling exponentially up to the maximum", () => {
    expect(retryDelayMs(serverError(), 1, policy)).toBe(99);
    expect(retryDelayMs(serverError(), 2, policy)).toBe(199);
    expect(retryDelayMs(serverError(), 3, policy)).toBe(249);
  });

  it("uses full jitter between zero and the ceiling", () => {
    expect(retryDelayMs(serverError(), 2, { ...policy, random: () => 0 })).toBe(0);
    expect(retryDelayMs(serverError(), 2, { ...policy, random: () => 0.5 })).toBe(100);
  });

  it("waits exactly the Retry-After the provider asked for, even above the backoff maximum", () => {
    const error = new ModelError("rate_limit", "slow down", { status: 429, retryAfterMs: 1000 });
    expect(retryDelayMs(error, 1, policy)).toBe(1000);
  });

  it("gives up when the Retry-After is longer than the configured cap", () => {
    const error = new ModelError("rate_limit", "slow down", { status: 429, retryAfterMs: 5001 });
    expect(retryDelayMs(error, 1, policy)).toBeUndefined();
  });

  it("gives up after maxRetries retries", () => {
    expect(retryDelayMs(serverError(), 4, policy)).toBeUndefined();
  });

  it("never retries errors that are not retryable or not model errors", () => {
    expect(retryDelayMs(new ModelError("auth", "no"), 1, policy)).toBeUndefined();
    expect(retryDelayMs(new ModelError("server", "no", { retryable: false }), 1, policy)).toBeUndefined();
    expect(retryDelayMs(new Error("bug"), 1, policy)).toBeUndefined();
  });
});

describe("withRetry", () => {
  it("retries until success and reports each retry and the attempts used", async () => {
    const waits: number[] = [];
    const retries: number[] = [];
    let calls = 0;
    const result = await withRetry(
      async () => {
        calls += 1;
        if (calls < 3) throw serverError();
        return "done";
      },
      {
        policy,
        sleep: async (ms) => {
          waits.push(ms);
        },
        classify: (error) =>
          error instanceof ModelError ? error : new InternalError("test.internal", String(error)),
        onRetry: (info) => retries.push(info.attempt),
      },
    );
    expect(result).toEqual({ value: "done", attempts: 3 });
    expect(waits).toEqual([99, 199]);
    expect(retries).toEqual([1, 2]);
  });

  it("throws the classified error of the last attempt", async () => {
    const run = withRetry(
      async () => {
        throw serverError();
      },
      {
        policy: { ...policy, maxRetries: 1 },
        sleep: async () => {},
        classify: (error) =>
          error instanceof ModelError ? error : new InternalError("test.internal", String(error)),
      },
    );
    await expect(run).rejects.toMatchObject({ code: "llm.server" });
  });

  it("turns a sleep interrupted by the signal into the classifier's error", async () => {
    const controller = new AbortController();
    const run = withRetry(
      async () => {
        controller.abort();
        throw serverError();
      },
      {
        policy,
        sleep: abortableSleep,
        signal: controller.signal,
        classify: (error) =>
          error instanceof ModelError ? error : new ModelError("aborted", "caller aborted", { cause: error }),
      },
    );
    await expect(run).rejects.toMatchObject({ code: "llm.aborted" });
  });
});

describe("abortableSleep", () => {
  it("rejects as soon as the signal aborts instead of waiting out the delay", async () => {
    const controller = new AbortController();
    const started = performance.now();
    const sleeping = abortableSleep(10_000, controller.signal);
    setTimeout(() => controller.abort(new Error("stop")), 20);
    await expect(sleeping).rejects.toThrow("stop");
    expect(performance.now() - started).toBeLessThan(1000);
  });

  it("resolves after the delay when not aborted", async () => {
    const started = performance.now();
    await abortableSleep(30, new AbortController().signal);
    expect(performance.now() - started).toBeGreaterThanOrEqual(25);
  });
});
