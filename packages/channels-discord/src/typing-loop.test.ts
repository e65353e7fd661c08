import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { startTypingLoop } from "./typing-loop.js";

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("startTypingLoop", () => {
  it("pulses at once, then every interval, and never again once stopped", async () => {
    const pulses: number[] = [];
    const stop = await startTypingLoop({
      intervalMs: 8000,
      pulse: async () => {
        pulses.push(Date.now());
      },
      onError: () => {},
    });
    expect(pulses).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(8000 * 3);
    expect(pulses).toHaveLength(4);
    await stop();
    await vi.advanceTimersByTimeAsync(8000 * 5);
    expect(pulses).toHaveLength(4);
  });

  it("reports a failed pulse and keeps going", async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const stop = await startTypingLoop({
      intervalMs: 1000,
      pulse: async () => {
        calls += 1;
        if (calls === 1) throw new Error("429");
      },
      onError: (error) => errors.push(error),
    });
    await vi.advanceTimersByTimeAsync(1000);
    expect(calls).toBe(2);
    expect(errors).toEqual([new Error("429")]);
    await stop();
  });
});
