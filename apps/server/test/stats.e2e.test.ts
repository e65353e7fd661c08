import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { lastUserText, script } from "@almanac/testkit";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestServer, type TestServer } from "./test-server.js";

const KEY = "web:default:web:charts";

/** One console turn (server-sent events), read to the end. */
async function consoleTurn(running: TestServer, conversation: string, message: string): Promise<string> {
  const response = await running.api("/api/console/chat", {
    method: "POST",
    body: JSON.stringify({ conversation, message }),
  });
  expect(response.status).toBe(200);
  return response.text();
}

async function json<T>(running: TestServer, path: string): Promise<T> {
  const response = await running.api(path);
  expect(response.status, path).toBe(200);
  return (await response.json()) as T;
}

interface ContextHistory {
  key: string;
  contextWindow: number;
  contextTokens: number;
  turns: Array<{
    turn: number;
    at: number;
    contextTokens: number;
    promptTokens: number;
    completionTokens: number;
  }>;
  compactions: Array<{
    at: number;
    reason: string;
    tokensBefore: number;
    tokensAfter: number;
    turn?: number;
  }>;
}

interface TokenStats {
  timeZone: string;
  models: string[];
  days: Array<{
    date: string;
    models: Record<string, { promptTokens: number; completionTokens: number; calls: number }>;
  }>;
}

describe("chart data routes", () => {
  let running: TestServer;
  beforeAll(async () => {
    running = await startTestServer({ env: { ALMANAC_MEMORY_TIME_ZONE: "UTC" } });
    // Turns get long answers; anything else (the compaction's summary, the summarizer) a short one, so a
    // compaction visibly shrinks the context.
    running.llm.setFallback((request) => {
      const text = lastUserText(request);
      return script.text(
        text.startsWith("msg:")
          ? `Noted. ${"More words to grow the context. ".repeat(40)}`
          : "Sailing and tides.",
      );
    });
  }, 30_000);
  afterAll(async () => running?.close());

  it("records context tokens per turn and marks the compaction on the turn it shaped", async () => {
    await consoleTurn(running, "charts", "msg: first message about sailing");
    await consoleTurn(running, "charts", "msg: second message about tides");
    const before = await json<ContextHistory>(
      running,
      `/api/sessions/${encodeURIComponent(KEY)}/context-history`,
    );
    expect(before.turns.map((turn) => turn.turn)).toEqual([1, 2]);
    expect(before.turns[1]?.contextTokens).toBeGreaterThan(before.turns[0]?.contextTokens ?? Infinity);
    expect(before.turns.every((turn) => turn.promptTokens > 0 && turn.completionTokens > 0)).toBe(true);
    expect(before.contextWindow).toBe(32_000);
    expect(before.compactions).toEqual([]);

    for (const topic of ["knots", "sails", "weather"])
      await consoleTurn(running, "charts", `msg: about ${topic}`);
    const compact = await running.api(`/api/sessions/${encodeURIComponent(KEY)}/compact`, { method: "POST" });
    expect(compact.status).toBe(200);
    await consoleTurn(running, "charts", "msg: third message after the compaction");
    const after = await json<ContextHistory>(
      running,
      `/api/sessions/${encodeURIComponent(KEY)}/context-history`,
    );
    expect(after.turns.map((turn) => turn.turn)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(after.compactions).toHaveLength(1);
    const compaction = after.compactions[0];
    expect(compaction?.reason).toBe("command");
    expect(compaction?.turn).toBe(6);
    expect(compaction?.tokensAfter).toBeLessThan(compaction?.tokensBefore ?? 0);
    // The compacted context is what the sixth turn started from: smaller than after the fifth.
    expect(after.turns[5]?.contextTokens).toBeLessThan(after.turns[4]?.contextTokens ?? 0);
  });

  it("answers 404 for an unknown session and 400 for a bad day count", async () => {
    const missing = await running.api(
      `/api/sessions/${encodeURIComponent("web:default:web:nobody")}/context-history`,
    );
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe("session.not_found");
    for (const days of ["0", "400", "x"]) {
      const bad = await running.api(`/api/stats/tokens?days=${days}`);
      expect(bad.status, days).toBe(400);
      expect(((await bad.json()) as { error: { code: string } }).error.code).toBe("request.invalid");
    }
  });

  it("sums tokens per day per model, today last, and lists every day of the range", async () => {
    const stats = await json<TokenStats>(running, "/api/stats/tokens?days=7");
    expect(stats.timeZone).toBe("UTC");
    expect(stats.days).toHaveLength(7);
    expect(stats.days.at(-1)?.date).toBe(new Date().toISOString().slice(0, 10));
    expect(stats.models).toContain("scripted-model");
    const today = stats.days.at(-1)?.models["scripted-model"];
    // Three turns and the compaction's summary at least; the summarizer's calls count too.
    expect(today?.calls).toBeGreaterThanOrEqual(4);
    expect(today?.promptTokens).toBeGreaterThan(0);
    expect(stats.days.slice(0, -1).every((day) => Object.keys(day.models).length === 0)).toBe(true);
  });

  it("counts summarizer jobs per day", async () => {
    const stats = await json<{
      enabled: boolean;
      current: Record<string, number>;
      days: Array<{ date: string; enqueued: number; done: number; parked: number }>;
    }>(running, "/api/stats/summarizer?days=3");
    expect(stats.enabled).toBe(true);
    expect(stats.days).toHaveLength(3);
    expect(stats.days.at(-1)?.enqueued).toBeGreaterThanOrEqual(1);
    expect(Object.keys(stats.current).sort()).toEqual(["done", "parked", "pending", "running"]);
  });

  it("samples memory files and chunks into a durable daily record", async () => {
    const put = await running.api("/api/memory/files/MEMORY.md", {
      method: "PUT",
      body: JSON.stringify({ content: "# Facts\n\n- The user sails a dinghy called Marigold.\n" }),
    });
    expect(put.status).toBeLessThan(300);
    let samples: Array<{ date: string; files: number; chunks: number }> = [];
    // The index follows the write through its watcher; the sample is taken when it is idle again.
    for (let attempt = 0; attempt < 100; attempt += 1) {
      samples = (await json<{ samples: typeof samples }>(running, "/api/stats/memory?days=30")).samples;
      if ((samples.at(-1)?.chunks ?? 0) > 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(samples.at(-1)?.files).toBeGreaterThanOrEqual(1);
    expect(samples.at(-1)?.chunks).toBeGreaterThanOrEqual(1);
    const onDisk = await readFile(join(running.home, "state", "stats", "memory-samples.jsonl"), "utf8");
    expect(onDisk.trim().split("\n").length).toBeGreaterThanOrEqual(1);
  });

  it("keeps the history across a restart and starts it over after a reset", async () => {
    const home = running.home;
    const llm = running.llm;
    await running.server.close();
    const restarted = await startTestServer({ home, llm, env: { ALMANAC_MEMORY_TIME_ZONE: "UTC" } });
    try {
      const kept = await json<ContextHistory>(
        restarted,
        `/api/sessions/${encodeURIComponent(KEY)}/context-history`,
      );
      expect(kept.turns.map((turn) => turn.turn)).toEqual([1, 2, 3, 4, 5, 6]);
      const reset = await restarted.api(`/api/sessions/${encodeURIComponent(KEY)}/reset`, { method: "POST" });
      expect(reset.status).toBe(200);
      await consoleTurn(restarted, "charts", "msg: a fresh start");
      const fresh = await json<ContextHistory>(
        restarted,
        `/api/sessions/${encodeURIComponent(KEY)}/context-history`,
      );
      expect(fresh.turns.map((turn) => turn.turn)).toEqual([1]);
      expect(fresh.compactions).toEqual([]);
    } finally {
      await restarted.close();
    }
  });
});

describe("first-run setup route", () => {
  it("reports the doctor's checks and what to set when no model is configured", async () => {
    const running = await startTestServer({ withModel: false });
    try {
      const body = await json<{
        modelConfigured: boolean;
        missing: string[];
        ok: boolean;
        checks: Array<{ name: string; status: string; message: string; hint?: string }>;
        examples: Array<{ id: string; env: Record<string, string> }>;
      }>(running, "/api/setup");
      expect(body.modelConfigured).toBe(false);
      expect(body.missing).toEqual(["ALMANAC_MODEL_BASE_URL", "ALMANAC_MODEL_NAME"]);
      expect(body.ok).toBe(false);
      expect(body.checks.map((entry) => entry.name)).toEqual([
        "config",
        "data directory",
        "model",
        "embeddings",
        "channels",
        "server",
        "index",
      ]);
      const model = body.checks.find((entry) => entry.name === "model");
      expect(model?.status).toBe("fail");
      expect(model?.hint).toContain("ALMANAC_MODEL_BASE_URL");
      expect(body.examples.map((example) => example.id)).toEqual([
        "openai",
        "dashscope",
        "ollama",
        "vllm",
        "lm-studio",
      ]);
      expect((await fetch(`${running.server.url}/api/setup`)).status).toBe(401);
    } finally {
      await running.close();
    }
  });

  it("probes the configured model like `almanac doctor` does", async () => {
    const running = await startTestServer();
    try {
      const body = await json<{
        modelConfigured: boolean;
        ok: boolean;
        checks: Array<{ name: string; status: string }>;
      }>(running, "/api/setup");
      expect(body.modelConfigured).toBe(true);
      expect(body.checks.find((entry) => entry.name === "model")?.status).toBe("ok");
      expect(body.ok).toBe(true);
    } finally {
      await running.close();
    }
  });
});
