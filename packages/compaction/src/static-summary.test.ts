import { createTokenCounter } from "@almanac/tokenizer";
import { describe, expect, it } from "vitest";
import { assistant, createTestClock, toolRound, user } from "../test/transcripts.js";
import { indexToolCalls } from "./cheap-passes.js";
import { buildStaticSummary } from "./static-summary.js";
import { summaryTextSchema } from "./summary-prompt.js";

const counter = createTokenCounter();
const clock = createTestClock();

describe("buildStaticSummary", () => {
  const messages = [
    user("请把部署日志整理到 notes/deploy.md, see https://ci.example.com/run/77", clock),
    ...toolRound(
      [
        { name: "read_file", arguments: { path: "logs/deploy.log" }, output: "line" },
        {
          name: "read_file",
          arguments: { path: "logs/missing.log" },
          output: "File not found: logs/missing.log",
          isError: true,
        },
      ],
      clock,
    ),
    ...toolRound(
      [{ name: "write_file", arguments: { path: "notes/deploy.md", content: "…" }, output: "Wrote." }],
      clock,
    ),
    assistant("Done: notes/deploy.md written.", clock),
  ];
  const calls = indexToolCalls(messages);

  it("extracts requests, tool counts, files, errors and URLs without a model", () => {
    const text = buildStaticSummary({
      previousSummary: undefined,
      messages,
      turnPrefix: [],
      calls,
      counter,
      maxTokens: 2_000,
    });
    expect(text).toContain("请把部署日志整理到 notes/deploy.md");
    expect(text).toContain("read_file ×2, write_file ×1");
    expect(text).toContain("- logs/deploy.log");
    expect(text).toContain("- notes/deploy.md");
    expect(text).toContain("read_file: File not found: logs/missing.log");
    expect(text).toContain("https://ci.example.com/run/77");
    expect(text).toContain('Last answer given: "Done: notes/deploy.md written."');
  });

  it("has every section, so it passes the same validation as a model's summary", () => {
    const text = buildStaticSummary({
      previousSummary: undefined,
      messages: [],
      turnPrefix: messages.slice(1),
      calls,
      counter,
      maxTokens: 2_000,
    });
    expect(summaryTextSchema(true).safeParse(text).success).toBe(true);
  });

  it("keeps the previous summary verbatim below the extract", () => {
    const previous = "## Goal\nMigrate the 订单 database (ticket OPS-4821)";
    const text = buildStaticSummary({
      previousSummary: previous,
      messages,
      turnPrefix: [],
      calls,
      counter,
      maxTokens: 2_000,
    });
    expect(text).toContain(`## Earlier summary (kept verbatim)\n${previous}`);
  });

  it("cuts the middle of a previous summary that alone would break the budget", () => {
    const previous = `START ${"word ".repeat(5_000)} END`;
    const text = buildStaticSummary({
      previousSummary: previous,
      messages,
      turnPrefix: [],
      calls,
      counter,
      maxTokens: 1_000,
    });
    expect(text).toContain("START");
    expect(text).toContain("END");
    expect(counter.countText(text)).toBeLessThanOrEqual(1_000);
  });
});
