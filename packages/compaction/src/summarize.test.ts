import { type ChatRequest, messageText, ProviderError, silentLogger } from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { describe, expect, it } from "vitest";
import { FakeSummaryModel, validSummary } from "../test/summary-fixtures.js";
import {
  assistant,
  createRandom,
  createTestClock,
  generatedText,
  toolRound,
  user,
} from "../test/transcripts.js";
import { indexToolCalls } from "./cheap-passes.js";
import { type SummarizeOptions, summarizeMessages } from "./summarize.js";

const counter = createTokenCounter();
const clock = createTestClock();
const random = createRandom(11);

const messages = [
  user("migrate the orders database", clock),
  ...toolRound(
    [{ name: "read_file", arguments: { path: "db/plan.md" }, output: generatedText(random, 2_000) }],
    clock,
  ),
  assistant("The plan is ready.", clock),
];
const calls = indexToolCalls(messages);

function options(overrides: Partial<SummarizeOptions>): SummarizeOptions {
  return {
    counter,
    summaryModel: new FakeSummaryModel("summary"),
    fallbackModel: new FakeSummaryModel("main"),
    maxOutputTokens: 500,
    inputBudget: 20_000,
    timeoutMs: undefined,
    renderMaxChars: 4_000,
    logger: silentLogger,
    ...overrides,
  };
}

function materialOf(request: ChatRequest | undefined): string {
  const material = request?.messages[1];
  return material === undefined ? "" : messageText(material);
}

const failure = (status: number) =>
  new ProviderError("llm.server", `scripted ${status}`, { isRetryable: true, status });

describe("summarizeMessages", () => {
  it("uses the summary model and merges the previous summary in one request when everything fits", async () => {
    const summaryModel = new FakeSummaryModel("summary");
    const outcome = await summarizeMessages(
      { previousSummary: "## Goal\nold goal", messages, turnPrefix: [], calls },
      options({ summaryModel }),
    );
    expect(outcome).toMatchObject({ path: "model", llmCalls: 1, chunks: 1 });
    expect(outcome.text).toContain("summary #1");
    const material = materialOf(summaryModel.requests[0]);
    expect(material).toContain("old goal");
    expect(material).toContain("migrate the orders database");
    expect(summaryModel.requests[0]?.maxOutputTokens).toBe(500);
  });

  it("summarizes material too big for one request in chunks, each merging the summary before it", async () => {
    const summaryModel = new FakeSummaryModel("summary");
    const many = Array.from({ length: 12 }, (_, index) =>
      user(`request ${index} ${generatedText(random, 1_500)}`, clock),
    );
    const outcome = await summarizeMessages(
      { previousSummary: undefined, messages: many, turnPrefix: [], calls },
      options({ summaryModel, inputBudget: 2_500 }),
    );
    expect(outcome.chunks).toBeGreaterThan(2);
    expect(outcome.llmCalls).toBe(outcome.chunks);
    for (const [index, request] of summaryModel.requests.entries()) {
      const tokens = counter.countMessages(request.messages);
      expect(tokens).toBeLessThanOrEqual(2_500);
      if (index > 0) expect(materialOf(request)).toContain(`summary #${index}`);
    }
    const everything = summaryModel.requests.map((request) => materialOf(request)).join("\n");
    for (let index = 0; index < 12; index += 1) expect(everything).toContain(`request ${index} `);
  });

  it("retries once on the fallback model when the summary model fails", async () => {
    const summaryModel = new FakeSummaryModel("summary", undefined, [failure(500)]);
    const fallbackModel = new FakeSummaryModel("main");
    const outcome = await summarizeMessages(
      { previousSummary: undefined, messages, turnPrefix: [], calls },
      options({ summaryModel, fallbackModel }),
    );
    expect(outcome).toMatchObject({ path: "fallback", llmCalls: 2 });
    expect(outcome.failures[0]).toContain("summary: llm.server");
  });

  it("treats a summary without the sections as a failure and ends with the static summary", async () => {
    const summaryModel = new FakeSummaryModel("summary", undefined, ["Everything went fine. ".repeat(10)]);
    const fallbackModel = new FakeSummaryModel("main", undefined, [""]);
    const outcome = await summarizeMessages(
      { previousSummary: "## Goal\nkeep me", messages, turnPrefix: [], calls },
      options({ summaryModel, fallbackModel }),
    );
    expect(outcome.path).toBe("static");
    expect(outcome.failures).toHaveLength(2);
    expect(outcome.failures[0]).toContain("compaction.summary_invalid");
    expect(outcome.text).toContain("migrate the orders database");
    expect(outcome.text).toContain("## Goal\nkeep me");
  });

  it("goes straight to the static summary when no request could fit", async () => {
    const summaryModel = new FakeSummaryModel("summary");
    const outcome = await summarizeMessages(
      { previousSummary: undefined, messages, turnPrefix: [], calls },
      options({ summaryModel, inputBudget: 300 }),
    );
    expect(outcome).toMatchObject({ path: "static", llmCalls: 0 });
    expect(summaryModel.requests).toHaveLength(0);
  });

  it("stops the chain and throws when the run is cancelled", async () => {
    const controller = new AbortController();
    const summaryModel = new FakeSummaryModel("summary", undefined, [
      () => {
        controller.abort();
        throw failure(500);
      },
    ]);
    const fallbackModel = new FakeSummaryModel("main");
    await expect(
      summarizeMessages(
        { previousSummary: undefined, messages, turnPrefix: [], calls },
        options({ summaryModel, fallbackModel, signal: controller.signal }),
      ),
    ).rejects.toThrow(/scripted 500/);
    expect(fallbackModel.requests).toHaveLength(0);
  });

  it("requires the current-request section when the material has a turn prefix", async () => {
    const summaryModel = new FakeSummaryModel("summary", undefined, [validSummary("- no prefix section")]);
    const outcome = await summarizeMessages(
      { previousSummary: undefined, messages: [], turnPrefix: messages.slice(1), calls },
      options({ summaryModel }),
    );
    expect(outcome.path).toBe("fallback");
    expect(outcome.text).toContain("## Current request so far");
  });
});
