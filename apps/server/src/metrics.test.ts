import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics.js";

/** Every metric name the registry exposes, as a scrape shows it. */
async function exposedNames(): Promise<string[]> {
  const metrics = createMetrics({ queueDepth: () => 0, runningTurns: () => 0, loadedSessions: () => 0 });
  const { text } = await metrics.scrape();
  return [...text.matchAll(/^# TYPE (\S+) /gm)].map((match) => match[1] ?? "");
}

describe("metric names", () => {
  it("carry the almanac_ prefix once and never repeat a word twice in a row", async () => {
    const names = await exposedNames();
    expect(names).toContain("almanac_process_cpu_seconds_total");
    expect(names).toContain("almanac_turns_total");
    expect(names.length).toBeGreaterThan(20);
    for (const name of names) {
      expect(name.startsWith("almanac_")).toBe(true);
      const words = name.split("_");
      const repeated = words.find((word, index) => index > 0 && word === words[index - 1]);
      expect(repeated, name).toBeUndefined();
    }
  });
});

describe("createMetrics", () => {
  it("keeps what is counted before prom-client is started, and starts it once", async () => {
    const metrics = createMetrics({ queueDepth: () => 3, runningTurns: () => 1, loadedSessions: () => 2 });
    metrics.turns.inc({ channel: "api", outcome: "ok" });
    metrics.modelTokens.inc({ model: "m", kind: "prompt" }, 120);
    metrics.turnDuration.observe({ channel: "api" }, 0.25);
    metrics.start();
    metrics.start();
    metrics.turns.inc({ channel: "api", outcome: "ok" });
    const { contentType, text } = await metrics.scrape();
    expect(contentType).toMatch(/^text\/plain/);
    expect(text).toContain('almanac_turns_total{channel="api",outcome="ok"} 2');
    expect(text).toContain('almanac_model_tokens_total{model="m",kind="prompt"} 120');
    expect(text).toContain('almanac_turn_duration_seconds_count{channel="api"} 1');
    expect(text).toContain("almanac_session_queue_depth 3");
    expect(text).toContain("almanac_loaded_sessions 2");
  });
});
