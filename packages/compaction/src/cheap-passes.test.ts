import { hasMark, type Message, toolCallsOf, toolResultsOf } from "@almanac/core";
import { createTokenCounter } from "@almanac/tokenizer";
import { describe, expect, it } from "vitest";
import { createRandom, createTestClock, generatedText, toolRound, user } from "../test/transcripts.js";
import {
  type CheapPassLimits,
  compressOldMessages,
  cutGiantOutputs,
  cutMiddle,
  indexToolCalls,
  type PassContext,
} from "./cheap-passes.js";
import { defaultToolSummaries } from "./tool-summaries.js";

const counter = createTokenCounter();
const clock = createTestClock();
const random = createRandom(7);

const limits: CheapPassLimits = {
  dedupeMinChars: 200,
  toolOutputMaxTokens: 150,
  argumentMaxChars: 300,
  argumentKeepChars: 120,
  giantMinTokens: 2_000,
  giantKeepTokens: 500,
};

function contextFor(messages: readonly Message[]): PassContext {
  return { counter, calls: indexToolCalls(messages), toolSummaries: defaultToolSummaries };
}

function resultText(message: Message | undefined): string {
  return message === undefined ? "" : (toolResultsOf(message)[0]?.content ?? "");
}

describe("compressOldMessages", () => {
  it("keeps the newest of identical outputs and points older copies at it", () => {
    const output = generatedText(random, 600);
    const messages = [
      user("check twice", clock),
      ...toolRound([{ name: "list_files", arguments: { path: "." }, output }], clock),
      ...toolRound([{ name: "list_files", arguments: { path: "." }, output }], clock),
    ];
    const newestCall = toolCallsOf(messages[3] as Message)[0]?.id ?? "";
    const run = compressOldMessages(messages, (index) => index < 3, contextFor(messages), limits);
    expect(resultText(run.messages[2])).toContain(`later output of list_files call ${newestCall}`);
    expect(run.messages[4]).toBe(messages[4]);
    expect(run.stats[0]).toMatchObject({ pass: "dedupe", messages: 1 });
    expect(run.stats[0]?.tokensRemoved).toBeGreaterThan(50);
  });

  it("replaces long old outputs with the tool's one-liner and leaves the kept tail untouched", () => {
    const big = `[notes/plan.md: lines 1-80 of 80]\n${generatedText(random, 3_000)}`;
    const messages = [
      ...toolRound([{ name: "read_file", arguments: { path: "notes/plan.md" }, output: big }], clock),
      ...toolRound([{ name: "read_file", arguments: { path: "notes/other.md" }, output: `${big}!` }], clock),
    ];
    const run = compressOldMessages(messages, (index) => index < 2, contextFor(messages), limits);
    const shortened = resultText(run.messages[1]);
    expect(shortened).toMatch(
      /^\[Earlier tool output shortened to save context\] read_file "notes\/plan\.md"/,
    );
    expect(shortened).toContain("lines 1-80 of 80");
    expect(shortened.split("\n")).toHaveLength(1);
    expect(run.messages[1]?.id).toBe(messages[1]?.id);
    expect(hasMark(run.messages[1] as Message, "compressed")).toBe(true);
    expect(run.messages[3]).toBe(messages[3]);
    expect(run.stats.find((stats) => stats.pass === "tool-summaries")?.tokensRemoved).toBe(
      counter.countMessage(messages[1] as Message) - counter.countMessage(run.messages[1] as Message),
    );
  });

  it("shortens long strings inside old tool-call arguments and keeps the arguments valid JSON", () => {
    const content = `第一行 "quoted" \\ ${generatedText(random, 2_000)}`;
    const messages = toolRound(
      [
        {
          name: "write_file",
          arguments: { path: "a.md", content, nested: [{ deep: content }] },
          output: "Wrote a.md.",
        },
      ],
      clock,
    );
    const run = compressOldMessages(messages, () => true, contextFor(messages), limits);
    const call = toolCallsOf(run.messages[0] as Message)[0];
    const parsed: unknown = JSON.parse(call?.arguments ?? "");
    expect(parsed).toMatchObject({ path: "a.md" });
    expect(JSON.stringify(parsed)).toContain("shortened to save context");
    expect(call?.arguments.length).toBeLessThan(1_000);
    expect(call?.id).toBe(toolCallsOf(messages[0] as Message)[0]?.id);
  });

  it("leaves arguments that are not JSON as they are", () => {
    const messages = toolRound(
      [{ name: "x", arguments: `{"broken": "${"y".repeat(500)}`, output: "ok" }],
      clock,
    );
    const run = compressOldMessages(messages, () => true, contextFor(messages), limits);
    expect(run.messages[0]).toBe(messages[0]);
  });
});

describe("cutGiantOutputs", () => {
  it("cuts a giant output anywhere, even the newest, to head and tail with a marker", () => {
    const giant = `HEAD-MARK ${generatedText(random, 30_000)} TAIL-MARK`;
    const messages = [
      user("read it", clock),
      ...toolRound([{ name: "read_file", arguments: {}, output: giant }], clock),
    ];
    const run = cutGiantOutputs(messages, contextFor(messages), limits);
    const text = resultText(run.messages[2]);
    expect(text.startsWith("HEAD-MARK")).toBe(true);
    expect(text.endsWith("TAIL-MARK")).toBe(true);
    expect(text).toMatch(/\[… \d+ of \d+ characters cut here to save context …\]/);
    expect(counter.countText(text)).toBeLessThan(700);
    expect(run.stats).toMatchObject({ pass: "giant-output-cut", messages: 1 });
  });

  it("never splits a surrogate pair when cutting", () => {
    const emoji = "😀".repeat(5_000);
    for (const keep of [1, 2, 3, 99, 100, 101]) {
      const cut = cutMiddle(emoji, keep);
      expect(cut.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, "")).not.toMatch(/[\uD800-\uDFFF]/);
    }
  });
});
