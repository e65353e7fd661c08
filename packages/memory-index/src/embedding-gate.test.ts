import type { Embedder } from "@almanac/core";
import { createRecordingLogger } from "@almanac/testkit";
import { describe, expect, it } from "vitest";
import { createCircuitBreaker } from "./circuit-breaker.js";
import { createEmbeddingGate } from "./embedding-gate.js";

describe("createCircuitBreaker", () => {
  it("opens after consecutive failures, half-opens after the cool-down, and closes on success", () => {
    let now = 0;
    const breaker = createCircuitBreaker({ failureThreshold: 2, cooldownMs: 100, clock: () => now });
    breaker.recordFailure();
    expect(breaker.state()).toBe("closed");
    breaker.recordFailure();
    expect(breaker.state()).toBe("open");
    expect(breaker.tryAcquire()).toBe(false);
    now = 100;
    expect(breaker.state()).toBe("half-open");
    expect(breaker.tryAcquire()).toBe(true);
    expect(breaker.tryAcquire()).toBe(false); // one trial at a time
    breaker.recordSuccess();
    expect(breaker.state()).toBe("closed");
    expect(breaker.failures()).toBe(0);
  });

  it("waits twice as long after a failed trial, up to the maximum", () => {
    let now = 0;
    const breaker = createCircuitBreaker({
      failureThreshold: 1,
      cooldownMs: 100,
      maxCooldownMs: 250,
      clock: () => now,
    });
    breaker.recordFailure();
    now = 100;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.recordFailure();
    now = 299;
    expect(breaker.state()).toBe("open");
    now = 300;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.recordFailure();
    now = 549;
    expect(breaker.state()).toBe("open");
    now = 550;
    expect(breaker.state()).toBe("half-open");
  });

  it("a cancelled trial frees the half-open slot without counting", () => {
    let now = 0;
    const breaker = createCircuitBreaker({ failureThreshold: 1, cooldownMs: 10, clock: () => now });
    breaker.recordFailure();
    now = 10;
    expect(breaker.tryAcquire()).toBe(true);
    breaker.recordCancelled();
    expect(breaker.tryAcquire()).toBe(true);
    expect(breaker.failures()).toBe(1);
  });
});

function flakyEmbedder(outcomes: ("ok" | "fail")[]): Embedder & { calls: number } {
  const embedder = {
    modelName: "flaky",
    dimensions: 2,
    calls: 0,
    async embed(texts: readonly string[]) {
      embedder.calls += 1;
      if ((outcomes.shift() ?? "ok") === "fail") throw new Error("provider down");
      return texts.map(() => [1, 0]);
    },
  };
  return embedder;
}

describe("createEmbeddingGate", () => {
  it("never throws, stops calling a failing provider, and logs each mode change once", async () => {
    let now = 0;
    const logger = createRecordingLogger();
    const embedder = flakyEmbedder(["fail", "fail", "ok"]);
    const gate = createEmbeddingGate({
      embedder,
      failureThreshold: 2,
      cooldownMs: 1000,
      clock: () => now,
      logger,
    });
    const modes: string[] = [];
    gate.onModeChange((mode) => modes.push(mode));

    expect(await gate.embed(["a"])).toEqual({
      ok: false,
      reason: "the embedding provider failed (provider down)",
    });
    expect(gate.mode()).toBe("hybrid");
    await gate.embed(["a"]);
    expect(gate.mode()).toBe("text");
    expect(await gate.embed(["a"])).toMatchObject({ ok: false });
    expect(embedder.calls).toBe(2);
    expect(gate.status()).toMatchObject({
      circuit: "open",
      consecutiveFailures: 2,
      lastError: "provider down",
    });

    now = 1000;
    expect(await gate.embed(["a", "b"])).toEqual({
      ok: true,
      vectors: [
        [1, 0],
        [1, 0],
      ],
    });
    expect(gate.status()).toMatchObject({ mode: "hybrid", circuit: "closed", lastError: undefined });
    expect(modes).toEqual(["text", "hybrid"]);
    const changes = logger.entries.filter((entry) => entry.level === "warn" || entry.level === "info");
    expect(changes.map((entry) => entry.message)).toEqual([
      "embedding provider unavailable: memory search is full-text only until it recovers",
      "embedding provider is back: memory search is hybrid again",
    ]);
  });

  it("without a provider is full-text only and says why", async () => {
    const logger = createRecordingLogger();
    const gate = createEmbeddingGate({ logger });
    expect(gate.mode()).toBe("text");
    expect(await gate.embed(["a"])).toEqual({ ok: false, reason: "no embedding provider is configured" });
    expect(logger.entries.map((entry) => entry.message)).toEqual([
      "no embedding provider configured: memory search is full-text only",
    ]);
  });

  it("does not count a call its caller cancelled as a provider failure", async () => {
    const controller = new AbortController();
    const embedder: Embedder = {
      modelName: "slow",
      dimensions: 2,
      embed: (_texts, options) =>
        new Promise((_resolve, reject) =>
          options?.signal?.addEventListener("abort", () => reject(new Error("aborted"))),
        ),
    };
    const gate = createEmbeddingGate({ embedder, failureThreshold: 1 });
    const pending = gate.embed(["a"], { signal: controller.signal });
    controller.abort();
    expect(await pending).toEqual({ ok: false, reason: "the embedding call was cancelled" });
    expect(gate.status()).toMatchObject({ circuit: "closed", consecutiveFailures: 0 });
  });
});
