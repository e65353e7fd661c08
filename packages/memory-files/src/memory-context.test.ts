import { createTokenCounter } from "@almanac/tokenizer";
import { describe, expect, it } from "vitest";
import { hashContent } from "./content-hash.js";
import { buildMemoryContext, MEMORY_GUIDE, type MemoryFileReader } from "./memory-context.js";

const counter = createTokenCounter();

function fakeStore(files: Record<string, string>): MemoryFileReader {
  return {
    async tryRead(relativePath) {
      const content = files[relativePath];
      return content === undefined ? undefined : { path: relativePath, content, hash: hashContent(content) };
    },
  };
}

const lines = (prefix: string, count: number) =>
  `${Array.from({ length: count }, (_, index) => `- ${prefix} entry number ${index + 1} with some words`).join("\n")}\n`;

// 2024-05-01 23:30 in Shanghai is still 2024-05-01 15:30 UTC.
const now = Date.UTC(2024, 4, 1, 15, 30);

describe("buildMemoryContext", () => {
  it("includes small files whole, with no truncation note", async () => {
    const text = await buildMemoryContext({
      store: fakeStore({
        "MEMORY.md": "# Person\n- prefers tea\n",
        "memory/2024-05-01.md": "# 2024-05-01\n- 09:00 fixed OPS-4821\n",
        "memory/2024-04-30.md": "# 2024-04-30\n- 18:00 planned the trip\n",
      }),
      timeZone: "Asia/Shanghai",
      now,
      tokenCounter: counter,
    });
    expect(text).toContain("today is 2024-05-01, Asia/Shanghai");
    expect(text).toContain("- prefers tea");
    expect(text).toContain("- 09:00 fixed OPS-4821");
    expect(text).toContain("- 18:00 planned the trip");
    expect(text).not.toContain("not shown");
  });

  it("uses the configured time zone to decide which logs are today's and yesterday's", async () => {
    const text = await buildMemoryContext({
      store: fakeStore({
        "memory/2024-05-02.md": "- shanghai morning\n",
        "memory/2024-05-01.md": "- the day before\n",
      }),
      timeZone: "Asia/Shanghai",
      now: Date.UTC(2024, 4, 1, 16, 30),
      tokenCounter: counter,
    });
    expect(text).toMatch(/### memory\/2024-05-02\.md \(today\)\n- shanghai morning/);
    expect(text).toMatch(/### memory\/2024-05-01\.md \(yesterday\)\n- the day before/);
  });

  it("cuts long files to the budget and states how many lines were left out and which file to read", async () => {
    const text = await buildMemoryContext({
      store: fakeStore({
        "MEMORY.md": lines("long-term", 200),
        "memory/2024-05-01.md": lines("today", 200),
        "memory/2024-04-30.md": lines("yesterday", 200),
      }),
      timeZone: "Asia/Shanghai",
      now,
      budgetTokens: 600,
      tokenCounter: counter,
    });
    expect(text).toMatch(/\.\.\. \d+ more lines not shown; read MEMORY\.md with read_file\./);
    expect(text).toMatch(/\.\.\. \d+ earlier lines not shown; read memory\/2024-05-01\.md with read_file\./);
    expect(text).toMatch(/\.\.\. \d+ earlier lines not shown; read memory\/2024-04-30\.md with read_file\./);
    // MEMORY.md keeps its beginning; daily logs keep their latest entries.
    expect(text).toContain("- long-term entry number 1 ");
    expect(text).toContain("- today entry number 200 ");
    expect(text).not.toContain("- today entry number 1 ");
    const excerptTokens = text
      .split("\n")
      .filter((line) => line.startsWith("- "))
      .reduce((sum, line) => sum + counter.countText(`${line}\n`), 0);
    expect(excerptTokens).toBeLessThanOrEqual(600);
    expect(excerptTokens).toBeGreaterThan(500);
  });

  it("gives the budget a small MEMORY.md does not need to the daily logs", async () => {
    const build = (memory: string) =>
      buildMemoryContext({
        store: fakeStore({ "MEMORY.md": memory, "memory/2024-05-01.md": lines("today", 200) }),
        timeZone: "Asia/Shanghai",
        now,
        budgetTokens: 400,
        tokenCounter: counter,
      });
    const shown = (text: string) => text.split("\n").filter((line) => line.startsWith("- today")).length;
    expect(shown(await build("- one fact\n"))).toBeGreaterThan(shown(await build(lines("long-term", 200))));
  });

  it("says plainly when files do not exist", async () => {
    const text = await buildMemoryContext({
      store: fakeStore({}),
      timeZone: "UTC",
      now,
      tokenCounter: counter,
    });
    expect(text).toContain("MEMORY.md does not exist yet.");
    expect(text).toContain("No log for today yet.");
    expect(text).toContain("No log for yesterday.");
  });

  it("guides the agent to search memory and to record facts in MEMORY.md without duplicates", () => {
    expect(MEMORY_GUIDE).toContain("memory_search");
    expect(MEMORY_GUIDE).toContain("memory_get");
    expect(MEMORY_GUIDE).toMatch(/remember that/);
    expect(MEMORY_GUIDE).toMatch(/one fact per bullet/i);
  });
});
