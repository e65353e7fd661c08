import { describe, expect, it } from "vitest";
import { createMetrics } from "./metrics.js";

/** Every metric name the registry exposes, as a scrape shows it. */
async function exposedNames(): Promise<string[]> {
  const metrics = createMetrics({ queueDepth: () => 0, runningTurns: () => 0, loadedSessions: () => 0 });
  const text = await metrics.registry.metrics();
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
